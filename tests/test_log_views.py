"""How each CLI's output reads in ``canopy graph logs``, on real output: the samples of
``tests/fixtures/harness-samples`` and the pinned CLIs' own streams of
``tests/fixtures/cli-streams`` (tool calls, tool errors, denials), line by line as a
follower feeds them, then what the run came to."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from canopy.platforms import get_platform
from canopy.platforms.view import LogContext

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = FIXTURES / "harness-samples"
STREAMS = FIXTURES / "cli-streams"
NOW = datetime(2026, 1, 15, 17, 0, tzinfo=UTC)
COMMAND = "python3 -c 'open('\"'\"'ran.txt'\"'\"', '\"'\"'w'\"'\"').write('\"'\"'ok'\"'\"')'"
"""The command every recorded stream runs, as the agent wrote it (shell-quoted)."""
REPLY = "Wrote app/x.py and ran it."


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No config file, and an empty Codex home (its denials are read from rollouts)."""
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))


def rendered(platform: str, output: str, cwd: str | None = None) -> list[str]:
    """The output fed line by line, as ``graph logs`` feeds a log, then the run's end."""
    adapter = get_platform(platform)
    seen = LogContext(cwd=cwd)
    shown = [text for line in output.splitlines() for text in adapter.render(line, seen)]
    return shown + adapter.render_end(output, seen, NOW)


def events(*events: dict[str, object]) -> str:
    return "\n".join(json.dumps(event) for event in events) + "\n"


# ------------------------------------------------------------ the recorded CLI streams


def test_claude_shows_text_tool_calls_relative_to_its_cwd_and_the_usage() -> None:
    output = (STREAMS / "claude_2.1.332_workspace.log").read_text()
    assert rendered("claude", output) == [
        "✎ Write app/x.py",
        f"$ {COMMAND}",
        REPLY,
        "Σ 20 in · 10 out · 0 cache read · 0 cache write · $0.0003 · 3 turns · claude-opus-5-5",
    ]


def test_claude_shows_refused_calls_as_they_fail_and_its_denials_at_the_end() -> None:
    output = (STREAMS / "claude_2.1.332_read-only.log").read_text()
    shown = rendered("claude", output)
    refused = "Permission to use {} has been denied because Claude Code is running in don't ask"
    assert shown[:2] == ["✎ Write app/x.py", f"$ {COMMAND}"]
    assert shown[2].startswith(f"✗ Write: {refused.format('Write')}")
    assert shown[3].startswith(f"✗ Bash: {refused.format('Bash')}")
    assert len(shown[2]) == 200 and shown[2].endswith("…")
    assert shown[4:] == [
        REPLY,
        "⊘ denied: Write app/x.py",
        f"⊘ denied: Bash: {COMMAND}",
        "Σ 20 in · 10 out · 0 cache read · 0 cache write · $0.0003 · 3 turns · claude-opus-5-5",
    ]


def test_codex_shows_changes_and_commands_as_the_agent_wrote_them() -> None:
    """The command without the ``bash -lc`` Codex wraps it in; the changed file relative
    to the run's workdir; each item once, though Codex announces it twice."""
    output = (STREAMS / "codex_0.171.0_workspace.log").read_text()
    workdir = "/tmp/tmp54hkvvhh/work"
    assert rendered("codex", output, cwd=workdir) == [
        "✎ add app/x.py",
        f"$ {COMMAND}",
        REPLY,
        "Σ 20 in · 10 out · 0 cache read · 1 turn",
    ]


def test_codex_shows_its_stderr_log_line_for_a_refused_patch() -> None:
    """``--json`` leaves the refusals out; the rollout that has them is not here."""
    output = (STREAMS / "codex_0.171.0_read-only.log").read_text()
    assert rendered("codex", output) == [
        output.splitlines()[2],
        REPLY,
        "Σ 20 in · 10 out · 0 cache read · 1 turn",
    ]
    assert "ERROR codex_core::tools::router: error=patch rejected" in output.splitlines()[2]


def test_gemini_shows_tool_calls_and_its_stderr_as_it_is() -> None:
    output = (STREAMS / "gemini_0.61.0_workspace.log").read_text()
    stderr = output.splitlines()[8:]
    assert stderr[1] == "YOLO mode is enabled. All tool calls will be automatically approved."
    assert rendered("gemini", output) == [
        "✎ write_file app/x.py",
        f"$ {COMMAND}",
        REPLY,
        *stderr,
        "Σ 30 in · 15 out · 0 cache read · gemini-3.8-flash",
    ]


def test_gemini_shows_refused_calls_and_its_denials() -> None:
    output = (STREAMS / "gemini_0.61.0_read-only.log").read_text()
    shown = rendered("gemini", output)
    assert shown[:5] == [
        "✎ write_file app/x.py",
        f"$ {COMMAND}",
        '✗ write_file: Tool "write_file" not found. Did you mean one of: "read_file",'
        ' "update_topic", "grep_search"?',
        '✗ run_shell_command: Tool "run_shell_command" not found. Did you mean one of:'
        ' "update_topic", "grep_search", "read_file"?',
        REPLY,
    ]
    assert shown[-3:] == [
        "⊘ denied: write_file app/x.py (not offered)",
        f"⊘ denied: run_shell_command: {COMMAND} (not offered)",
        "Σ 30 in · 15 out · 0 cache read · gemini-3.8-flash",
    ]


# ------------------------------------------------------------------- the samples


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (
            "claude_ok_2.1.83_issue38673.jsonl",
            ["Hello.", "Σ 3 in · 6 out · $0.0240 · 1 turn · claude-opus-4-6"],
        ),
        (
            "claude_session_limit_2.1.220_capture.jsonl",
            [
                "✗ You've hit your session limit · resets 9am (Europe/Berlin)",
                "⏸ You've hit your session limit · resets 9am (Europe/Berlin)"
                " (resets at 2026-01-16 08:00:00 UTC)",
            ],
        ),
        (
            "claude_rejected_event_paperclip5776.jsonl",
            [
                "⏸ Claude five_hour limit reached (rate_limit_event rejected) (reported reset"
                " 2026-05-12 06:00:00 UTC is too far ahead to be right; retrying at"
                " 2026-01-15 23:00:00 UTC)"
            ],
        ),
        (
            "codex_ok_captured_53143053056.jsonl",
            ["4", "Σ 1.3k in · 5 out · 9.6k cache read · 1 turn"],
        ),
        (
            "codex_hybrid_stdin_notice_54875752316.txt",
            [
                "Reading additional input from stdin...",
                "! Model metadata warning",
                "你好\uff01有什么我可以帮你的吗\uff1f",
                "Σ 16.7k in · 12 out · 1 turn",
            ],
        ),
        (
            "codex_rollout_budget_issue37676.jsonl",
            [
                "! Under-development features enabled: rollout_budget. ...",
                "ok",
                "✗ shared rollout token budget exhausted",
            ],
        ),
        (
            "gemini_tool_use_fixture_52212130363.jsonl",
            [
                "I will list the files.",
                "$ ls",
                "Here are the files.",
                "Σ 26.9k in · 87 out · 0 cache read · auto-gemini-3",
            ],
        ),
        (
            "gemini_transient_capacity_then_success.txt",
            [
                "Ripgrep is not available. Falling back to GrepTool.",
                "↻ Attempt 1 failed: You have exhausted your capacity on this model. Your quota"
                " will reset after 4s.. Retrying after 5042ms...",
                "Done.",
            ],
        ),
        (
            "gemini_auth_fail_0.50.0_verified.jsonl",
            ["✗ [API Error: … API_KEY_INVALID …]", "Σ 0 in · 0 out · 0 cache read · auto"],
        ),
    ],
)
def test_each_sample_reads_as_a_person_would_read_it(sample: str, expected: list[str]) -> None:
    """The failure a CLI repeats in its final event is shown once; a usage that names
    only a model says nothing worth a line."""
    output = (SAMPLES / sample).read_text()
    assert rendered(sample.split("_")[0], output) == expected


def test_a_quota_the_cli_gave_up_on_is_the_limit_after_its_retries() -> None:
    output = (SAMPLES / "gemini_stderr_daily_quota_59875375351.txt").read_text()
    shown = rendered("gemini", output)
    retries = [text for text in shown if text.startswith("↻ ")]
    assert [text[:40] for text in retries] == [
        "↻ Suggested retry after 25s.. Retrying a",
        "↻ Attempt 2 failed with status 503. Retr",
        "↻ Suggested retry after 12s.. Retrying a",
    ]
    assert shown[-1].startswith("⏸ Error when talking to Gemini API")
    assert shown[-1].endswith(
        "(no reset time given; retrying at 2026-01-15 23:00:00 UTC, the 6-hour fallback)"
    )


# ------------------------------------------------------------- shapes not recorded


def test_claude_retries_failed_tool_calls_and_thinking() -> None:
    retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10}
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make\ntest"}}
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "x"}
    read = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/a.py"}}
    failed = {"type": "tool_result", "tool_use_id": "t1", "is_error": True}
    output = events(
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s"},
        {**retry, "retry_delay_ms": 5000, "error_status": 529, "error": "overloaded"},
        {"type": "assistant", "message": {"content": [thinking, call, read]}},
        {"type": "user", "message": {"content": [{**failed, "content": "Exit code 2\nno rule"}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2"}]}},
    )
    assert rendered("claude", output) == [
        "↻ Claude API call failed: overloaded (HTTP 529); retry 1/10 in 5s",
        "$ make test",
        "→ Read a.py",
        "✗ Bash: Exit code 2",
    ]


def test_codex_shows_a_failed_command_with_its_exit_and_first_line() -> None:
    command = {"id": "i", "type": "command_execution", "command": "/bin/bash -lc 'make test'"}
    ended = {**command, "exit_code": 2, "status": "failed", "aggregated_output": "\nboom\n"}
    search = {"id": "w", "type": "web_search", "query": "pytest fixtures"}
    output = events(
        {"type": "item.started", "item": {**command, "status": "in_progress"}},
        {"type": "item.completed", "item": ended},
        {"type": "item.completed", "item": search},
        {"type": "item.completed", "item": {"id": "r", "type": "reasoning", "text": "hm"}},
        {"type": "error", "message": "Reconnecting... 1/5 (stream disconnected)"},
    )
    assert rendered("codex", output) == [
        "$ make test",
        "✗ exit code 2: boom",
        "→ web search pytest fixtures",
        "↻ Reconnecting... 1/5 (stream disconnected)",
    ]


def test_gemini_streams_text_line_by_line_and_ends_it_with_the_message() -> None:
    def delta(text: str) -> dict[str, object]:
        return {"type": "message", "role": "assistant", "content": text, "delta": True}

    adapter = get_platform("gemini")
    seen = LogContext()
    pieces = [delta("First li"), delta("ne.\nSecond"), delta(" line"), {"type": "result"}]
    shown = [adapter.render(json.dumps(piece), seen) for piece in pieces]
    assert shown == [[], ["First line."], [], ["Second line"]]
    seen.text = "held back"
    assert adapter.render_end("", seen, NOW) == ["held back"]


def test_a_user_defined_platform_shows_its_lines_as_they_are(tmp_path: Path) -> None:
    """Its output has no known shape: text as it is, JSON lines left out."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text('[platforms.mine]\nargv = ["mine"]\n')
    output = 'working\n{"type": "noise"}\n\n  done\t!\n'
    assert rendered("mine", output) == ["working", "  done\t!"]
