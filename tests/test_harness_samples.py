"""The platform adapters on real CLI output (tests/fixtures/harness-samples) and on every
usage-limit shape the CLIs print today: the limit, its reset, and no false alarms."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from canopy.platforms import HarnessUsage, RetryNotice, UsageLimit, get_platform, limit_wait
from canopy.platforms.gemini import GeminiPlatform

SAMPLES = Path(__file__).parent / "fixtures" / "harness-samples"
# Thursday 2026-01-15, 12:00 in New York (the machine's zone in these tests), 18:00 in Berlin.
NOW = datetime(2026, 1, 15, 17, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def new_york(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is New York (harnesses print local wall-clock resets); no config file."""
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def utc(month: int, day: int, hour: int = 0, minute: int = 0, year: int = 2026) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def limit(name: str, *lines: str | Mapping[str, object], now: datetime = NOW) -> UsageLimit | None:
    """What ``name``'s adapter reads from these output lines (dicts are JSON events)."""
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    return get_platform(name).usage_limit(text + "\n", now)


# ------------------------------------------------------------------------ samples


SAMPLE_READINGS: list[tuple[str, str | None, str | None, UsageLimit | None]] = [
    ("claude_ok_2.1.83_issue38673.jsonl", "REDACTED", "Hello.", None),
    (
        "claude_rejected_event_paperclip5776.jsonl",
        None,
        None,
        UsageLimit(
            datetime.fromtimestamp(1778565600, UTC),
            "Claude five_hour limit reached (rate_limit_event rejected)",
        ),
    ),
    (
        "claude_session_limit_2.1.220_capture.jsonl",
        "a74d2edb-d7df-475f-ad7f-2c89def2ca88",
        None,  # the limit message is Claude Code's, not the agent's reply
        UsageLimit(utc(1, 16, 8), "You've hit your session limit · resets 9am (Europe/Berlin)"),
    ),
    ("codex_ok_captured_53143053056.jsonl", "019d82d4-a270-7c93-aa19-bfc29826ba30", "4", None),
    (
        "codex_hybrid_stdin_notice_54875752316.txt",
        "019f0cbe-bd02-75f3-a758-1004ad5cad64",
        "你好\uff01有什么我可以帮你的吗\uff1f",
        None,
    ),
    ("codex_rollout_budget_issue37676.jsonl", "<redacted>", "ok", None),
    (
        "codex_turn_failed_usage_limit_sandboxed394.jsonl",
        "019dc000-0000-7000-8000-000000000394",
        None,
        UsageLimit(
            utc(4, 29, 2, 3),  # 10:03 PM in New York (EDT)
            "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to "
            "purchase more credits or try again at Apr 28th, 2026 10:03 PM.",
        ),
    ),
    ("gemini_auth_fail_0.50.0_verified.jsonl", "a559d264-82c8-48a4-85ec-0fbe645d82e0", None, None),
    ("gemini_tool_use_fixture_52212130363.jsonl", "test-session-123", "Here are the files.", None),
    ("gemini_transient_capacity_then_success.txt", "s-transient", "Done.", None),
]


@pytest.mark.parametrize(("sample", "session", "reply", "expected"), SAMPLE_READINGS)
def test_each_sample_gives_its_session_reply_and_limit(
    sample: str, session: str | None, reply: str | None, expected: UsageLimit | None
) -> None:
    platform = get_platform(sample.split("_")[0])
    output = (SAMPLES / sample).read_text(encoding="utf-8")
    ids = [found for found in map(platform.session_id_from_line, output.splitlines()) if found]
    assert (ids[-1] if ids else None) == session
    assert platform.reply_text(output) == reply
    assert platform.usage_limit(output, NOW) == expected


def test_gemini_samples_that_give_up_on_a_quota() -> None:
    """The daily quota is read from the error Gemini CLI gave up on, not its retries (whose
    "retry in 12s" is not its reset); a bare 429 is an API rate limit."""
    gemini = get_platform("gemini")
    daily = gemini.usage_limit(
        (SAMPLES / "gemini_stderr_daily_quota_59875375351.txt").read_text(), NOW
    )
    assert daily is not None and (daily.reset_at, daily.kind) == (None, "usage")
    assert "TerminalQuotaError: You have exhausted your daily quota" in daily.message
    exhausted = (SAMPLES / "gemini_429_resource_exhausted_issue1800.txt").read_text()
    found = gemini.usage_limit(exhausted, NOW)
    assert found is not None and (found.reset_at, found.kind) == (None, "rate")
    assert "RESOURCE_EXHAUSTED" in found.message


def test_every_sample_is_covered() -> None:
    covered = {reading[0] for reading in SAMPLE_READINGS}
    covered |= {
        "gemini_stderr_daily_quota_59875375351.txt",
        "gemini_429_resource_exhausted_issue1800.txt",
    }
    assert {path.name for path in SAMPLES.glob("*_*")} == covered


# ----------------------------------------------------------------- claude shapes


def claude_result(text: str) -> dict[str, object]:
    return {"type": "result", "subtype": "success", "is_error": True, "result": text}


def synthetic(text: str, error: str = "rate_limit") -> dict[str, object]:
    """The assistant message Claude Code writes itself when the API refuses."""
    content = [{"type": "text", "text": text}]
    message = {"model": "<synthetic>", "role": "assistant", "content": content}
    return {"type": "assistant", "message": message, "error": error, "is_api_error_message": True}


def rejected(**info: object) -> dict[str, object]:
    return {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", **info}}


@pytest.mark.parametrize(
    ("text", "reset"),
    [
        ("You've hit your limit · resets 2pm (Asia/Shanghai)", utc(1, 16, 6)),
        ("You've hit your usage limit · resets 9am", utc(1, 16, 14)),  # 9am passed: tomorrow
        ("You've hit your session limit · resets 2:10pm", utc(1, 15, 19, 10)),
        ("You've hit your session limit · resets 9am (Europe/Berlin)", utc(1, 16, 8)),
        ("You've hit your weekly limit · resets Mon 12:00am (America/Los_Angeles)", utc(1, 19, 8)),
        ("You've hit your weekly limit · resets Thu 3pm", utc(1, 15, 20)),  # later today
        ("You've hit your weekly limit · resets Thu 9am", utc(1, 22, 14)),  # a week on
        ("You've hit your Opus limit · resets Aug 17, 5am", utc(8, 17, 9)),
        ("You've hit your Sonnet limit · resets Sep 6 at 1pm (Europe/London)", utc(9, 6, 12)),
        ("You've hit your Opus limit · resets Jan 2, 5am", utc(1, 2, 10, year=2027)),  # next year
        ("You've hit your session limit · resets 9am (Europe/Berlin) · 429", utc(1, 16, 8)),
        ("API Error: 429 You've hit your limit · resets 11pm (UTC)", utc(1, 15, 23)),
        ("5-hour limit reached ∙ resets 3pm", utc(1, 15, 20)),
        ("Claude AI usage limit reached|1767225600", utc(1, 1, year=2026)),
        ("Your limit will reset at 10am (Europe/Paris)", utc(1, 16, 9)),
        ("You're out of extra usage · resets 4pm", utc(1, 15, 21)),
    ],
)
def test_claude_limit_texts(text: str, reset: datetime) -> None:
    for where in ([claude_result(text)], [synthetic(text)], [text]):  # result, message, stderr
        assert limit("claude", *where) == UsageLimit(reset, text), where


def test_claude_structured_payloads_come_first() -> None:
    text = "You've hit your session limit · resets 9am (Europe/Berlin)"
    exact = rejected(resetsAt=1768500000, rateLimitType="five_hour")
    with_time = limit("claude", exact, synthetic(text), claude_result(text))
    assert with_time == UsageLimit(datetime.fromtimestamp(1768500000, UTC), text)
    without_time = limit("claude", rejected(rateLimitType="five_hour"), claude_result(text))
    assert without_time == UsageLimit(utc(1, 16, 8), text)
    unworded = limit("claude", synthetic("Request rejected (429)"))
    assert unworded is not None and unworded.reset_at is None, "error rate_limit is a limit"


API_KEY_429 = (
    "API Error: Request rejected (429) · This request would exceed your account's rate limit."
    " Please try again later."
)


def test_claude_api_key_429_is_a_rate_limit_and_a_plans_429_a_usage_limit() -> None:
    """As 2.1.332 prints them: an API key's 429 after the CLI's own retries, with no
    ``rate_limit_event`` and no reset; a subscription's, with the event and its reset."""
    api_key = limit("claude", synthetic(API_KEY_429), claude_result(API_KEY_429))
    assert api_key == UsageLimit(None, API_KEY_429, kind="rate")
    text = "You've hit your 5-hour limit · resets 10:30pm (UTC)"
    plan = {**synthetic(text), "api_error": "usage_limit_reached", "api_error_status": 429}
    event = rejected(resetsAt=1768516200, rateLimitType="five_hour")
    assert limit("claude", event, plan, claude_result(text)) == UsageLimit(
        datetime.fromtimestamp(1768516200, UTC), text
    )
    unworded = {**synthetic("Request rejected (429)"), "api_error": "usage_limit_reached"}
    assert limit("claude", unworded) == UsageLimit(
        None, "Claude usage limit reached (rate_limit error message)"
    )


def test_claude_own_messages_are_never_the_reply() -> None:
    """ "Not logged in", API errors and limits are Claude Code's report, not the agent's."""
    login = "Not logged in · Please run /login"
    claude = get_platform("claude")
    output = [synthetic(login, "authentication_failed"), claude_result(login)]
    assert claude.reply_text("\n".join(map(json.dumps, output))) is None
    content = [{"type": "text", "text": "Half done."}]
    said: dict[str, object] = {"type": "assistant", "message": {"model": "m", "content": content}}
    output = [said, synthetic(API_KEY_429), claude_result(API_KEY_429)]
    assert claude.reply_text("\n".join(map(json.dumps, output))) == "Half done."


def test_claude_no_false_alarms() -> None:
    """The agent's own words and tool output never make a limit, nor other API errors."""
    said = (
        "You've hit your session limit · resets 9am (Europe/Berlin); usage limit reached|1767225600"
    )
    talk = {"type": "assistant", "message": {"content": [{"type": "text", "text": said}]}}
    tool = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "content": said, "is_error": True}]},
    }
    assert limit("claude", talk, tool) is None  # crashed with no result: still not a limit
    assert limit("claude", talk, tool, claude_result("Error: tool failed")) is None
    assert (
        limit("claude", synthetic("Invalid API key · Please run /login", "authentication_failed"))
        is None
    )
    assert limit("claude", claude_result("Context limit reached · /compact or /clear")) is None
    assert limit("claude", claude_result("You've hit your context limit")) is None
    ok = {"type": "result", "subtype": "success", "is_error": False, "result": said}
    assert limit("claude", rejected(), synthetic(said), ok) is None  # the turn completed


# ------------------------------------------------------------------ codex shapes


def codex_failure(message: str) -> list[str | Mapping[str, object]]:
    return [
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ]


@pytest.mark.parametrize(
    ("message", "reset"),
    [
        ("You've hit your usage limit. Try again at 3:05PM.", utc(1, 15, 20, 5)),
        ("You\u2019ve hit your usage limit. Try again at 3:05 PM.", utc(1, 15, 20, 5)),
        (
            "You've hit your usage limit. Upgrade to Plus to continue using Codex "
            "(https://chatgpt.com/explore/plus), or try again at Jan 21st, 2026 8:00 AM.",
            utc(1, 21, 13),
        ),
        ("You've hit your usage limit. Try again at Feb 2nd, 2026 1:30 PM.", utc(2, 2, 18, 30)),
        (
            "You've hit your usage limit. Try again at Jan 3rd, 2027 9:00 AM.",
            utc(1, 3, 14, year=2027),
        ),
        ("You've hit your usage limit. Try again at Jan 16th 9:05 AM.", utc(1, 16, 14, 5)),
        (
            "You\u2019ve hit your usage limit. Try again in 2 days 3 hours 5 minutes.",
            NOW + timedelta(days=2, hours=3, minutes=5),
        ),
        ("You've hit your usage limit. Try again in 1 day.", NOW + timedelta(days=1)),
        (
            "Your workspace usage limit has been reached. Visit https://chatgpt.com/codex/"
            "settings/usage to manage the limit or try again at 4:00 PM.",
            utc(1, 15, 21),
        ),
        ("You've hit your usage limit. Try again later.", None),
        ("Quota exceeded. Check your plan and billing details.", None),
    ],
)
def test_codex_limit_texts(message: str, reset: datetime | None) -> None:
    assert limit("codex", *codex_failure(message)) == UsageLimit(reset, message)
    assert limit("codex", f"ERROR: {message}") == UsageLimit(reset, f"ERROR: {message}")


def test_codex_no_false_alarms() -> None:
    said = "You've hit your usage limit. Try again in 1 hour. Quota exceeded. Check your plan."
    talk = {"type": "item.completed", "item": {"type": "agent_message", "text": said}}
    shell = {
        "type": "item.completed",
        "item": {"type": "command_execution", "aggregated_output": said},
    }
    warning = {"type": "item.completed", "item": {"type": "error", "message": said}}
    assert limit("codex", talk, shell, warning) is None
    assert (
        limit("codex", talk, shell, *codex_failure("stream disconnected before completion")) is None
    )


def codex_retried(why: str, final: str) -> list[str | Mapping[str, object]]:
    """Codex 0.171 retrying a failed request five times by itself, then giving up."""
    retries = [{"type": "error", "message": f"Reconnecting... {n}/5 ({why})"} for n in range(1, 6)]
    return [{"type": "turn.started"}, *retries, *codex_failure(final)]


RATE_LIMITED_STREAM = (
    "rate limit exceeded: Rate limit reached for gpt-5.5. Please try again in 11.054s."
)
HTTP_429 = "exceeded retry limit, last status: 429 Too Many Requests"


@pytest.mark.parametrize(
    ("output", "found"),
    [
        (codex_retried(HTTP_429, HTTP_429), UsageLimit(None, HTTP_429, "rate")),
        (
            codex_retried(RATE_LIMITED_STREAM, RATE_LIMITED_STREAM),
            UsageLimit(NOW + timedelta(seconds=11.054), RATE_LIMITED_STREAM, "rate"),
        ),
        (codex_retried(HTTP_429, "stream disconnected before completion"), None),
        (
            codex_retried("exceeded retry limit, last status: 500 Internal Server Error", "boom"),
            None,
        ),
        ([*codex_retried(HTTP_429, HTTP_429)[:3], {"type": "turn.completed", "usage": {}}], None),
    ],
)
def test_codex_api_key_rate_limits_after_its_own_retries(
    output: list[str | Mapping[str, object]], found: UsageLimit | None
) -> None:
    """An API key's 429 (``retry-after``) or a stream's ``rate_limit_exceeded``: a rate
    limit, worded by the failure Codex gave up on, not its retry notices; a retry that
    recovered, or a server error, is none."""
    assert limit("codex", *output) == found


# ----------------------------------------------------------------- gemini shapes


def gemini_error(kind: str, message: str) -> dict[str, object]:
    return {"type": "result", "status": "error", "error": {"type": kind, "message": message}}


def test_gemini_terminal_quota_errors() -> None:
    capacity = "You have exhausted your capacity on this model. Your quota will reset after 2h5m."
    found = limit("gemini", gemini_error("TerminalQuotaError", capacity))
    assert found == UsageLimit(NOW + timedelta(hours=2, minutes=5), capacity)
    unworded = limit("gemini", gemini_error("TerminalQuotaError", "quota"))
    assert unworded == UsageLimit(None, "quota"), "the error type alone is a limit"
    plain = "TerminalQuotaError: You have exhausted your daily quota on this model."
    assert limit("gemini", plain) == UsageLimit(None, plain)


def test_gemini_retries_it_recovers_from_are_not_limits() -> None:
    retried = [
        "Attempt 1 failed: You exceeded your current quota, please check your plan.",
        "* Quota exceeded for metric: generate_content_free_tier_requests, limit: 5",
        "Please retry in 25.338215412s.",
        "Suggested retry after 25s.. Retrying after 29364ms...",
        "Attempt 2 failed: You have exhausted your capacity on this model. Your quota will "
        "reset after 4s.. Retrying after 5042ms...",
    ]
    auth = gemini_error("FatalAuthenticationError", "API key not valid.")
    assert limit("gemini", *retried, auth) is None
    given_up = "Attempt 3 failed: You have exhausted your capacity on this model."
    found = limit("gemini", *retried, given_up)
    assert found == UsageLimit(None, given_up), "an attempt that was not retried is final"
    said = {"type": "message", "role": "assistant", "content": "RESOURCE_EXHAUSTED, retry in 5s"}
    tool = {"type": "tool_result", "status": "error", "output": "429 RESOURCE_EXHAUSTED"}
    assert limit("gemini", said, tool, gemini_error("FatalError", "boom")) is None


GEMINI_DAILY_QUOTA: list[str | Mapping[str, object]] = [
    {"type": "init", "timestamp": "t", "session_id": "g", "model": "auto"},
    gemini_error(
        "unknown",
        "[API Error: You have exhausted your daily quota on this model.]\n"
        "Please wait and try again later.",
    ),
    "Attempt 1 failed with status 429. Retrying with backoff... _ApiError: "
    '{"error":{"code":429,"message":"Please retry in 30s.","status":"RESOURCE_EXHAUSTED"}}',
    "    at throwErrorIfNotOK (file:///gemini/bundle/chunk.js:267833:24)",
    "    at async Turn.run (file:///gemini/bundle/chunk.js:333001:24) {",
    "  status: 429,",
    "  cause: {",
    "    message: 'Please retry in 30s.',",
    "  }",
    "}",
    "Error when talking to Gemini API Full report available at: /tmp/report.json "
    "TerminalQuotaError: You have exhausted your daily quota on this model.",
    "    at classifyGoogleError (file:///gemini/bundle/chunk.js:307344:16) {",
    "  cause: {",
    "    code: 429,",
    "    message: 'You exceeded your current quota.\\n' +",
    "      'Please retry in 7200s.',",
    "  },",
    "  status: 429",
    "}",
]
"""Gemini CLI 0.61's daily quota (exit 173), shortened: the reset is only in the stack
trace of the error it gave up on, after a retried attempt whose own trace names another."""


def test_gemini_daily_quota_reset_is_read_from_the_stack_trace() -> None:
    found = limit("gemini", *GEMINI_DAILY_QUOTA)
    message = "[API Error: You have exhausted your daily quota on this model.]"
    assert found == UsageLimit(NOW + timedelta(hours=2), message, "usage")
    stderr_only = limit("gemini", *GEMINI_DAILY_QUOTA[2:])
    assert stderr_only is not None and stderr_only.reset_at == NOW + timedelta(hours=2)
    assert stderr_only.message.endswith(
        "TerminalQuotaError: You have exhausted your daily quota on this model."
    )


def test_gemini_failure_lines_leave_out_retried_attempts_and_their_traces() -> None:
    plain = [str(text).strip() for text in GEMINI_DAILY_QUOTA[2:]]
    assert GeminiPlatform().failure_lines(plain) == plain[8:]
    given_up = ["Attempt 3 failed: You exceeded your current quota. Max attempts reached"]
    assert GeminiPlatform().failure_lines(plain[:8] + given_up) == given_up


@pytest.mark.parametrize(
    ("text", "wait"),
    [
        (
            "Attempt 1 failed: You have exhausted your capacity on this model. Your quota will "
            "reset after 2h0m0s.. Retrying after 7228060ms...",
            timedelta(hours=2),  # the reset it names, not the CLI's jittered sleep
        ),
        ("Suggested retry after 25s.. Retrying after 29364ms...", timedelta(seconds=25)),
        ("Attempt 1 failed: overloaded. Retrying after 5042ms...", timedelta(milliseconds=5042)),
        ("Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {}", None),
        ("Attempt 2 failed. Retrying with backoff... Error: fetch failed sending request", None),
    ],
)
def test_gemini_retry_notices(text: str, wait: timedelta | None) -> None:
    assert get_platform("gemini").retry_notice(text) == RetryNotice(text, wait)


def test_gemini_retry_notices_are_only_the_clis_own_lines() -> None:
    said = "Retrying after 5000ms..."
    talk = {"type": "message", "role": "assistant", "content": said, "delta": True}
    tool = {"type": "tool_result", "tool_id": "t", "status": "success", "output": said}
    given_up = "Attempt 3 failed: Quota exceeded. Max attempts reached"
    lines = [json.dumps(talk), json.dumps(tool), given_up, "    at retryWithBackoff"]
    assert [get_platform("gemini").retry_notice(text) for text in lines] == [None] * 4


def gemini_call(
    tool_id: str, name: str, error: tuple[str, str] | None, **params: str
) -> list[dict[str, object]]:
    """A ``tool_use`` and its ``tool_result``: a success, or ``error`` (type, message)."""
    use: dict[str, object] = {
        "type": "tool_use",
        "tool_name": name,
        "tool_id": tool_id,
        "parameters": params,
    }
    result: dict[str, object] = {"type": "tool_result", "tool_id": tool_id, "status": "success"}
    if error is not None:
        kind, message = error
        result |= {
            "status": "error",
            "output": message,
            "error": {"type": kind, "message": message},
        }
    return [use, result]


def test_gemini_denials_name_each_refused_call() -> None:
    """Refused: a tool not offered at this level, a policy denial, a path outside the
    workspace. A tool that merely failed is not a denial."""
    output = events(
        *gemini_call("1", "read_file", None, file_path="a.py"),
        *gemini_call(
            "2",
            "write_file",
            ("tool_not_registered", 'Tool "write_file" not found.'),
            file_path="out.txt",
        ),
        *gemini_call(
            "3",
            "run_shell_command",
            ("policy_violation", "Tool execution denied by policy."),
            command="make \n  test",
        ),
        *gemini_call(
            "4",
            "write_file",
            ("invalid_tool_params", 'Path not in workspace: Attempted path "/etc/x"'),
            file_path="/etc/x",
        ),
        *gemini_call("5", "replace", ("edit_no_occurrence_found", "no match"), file_path="b"),
        *gemini_call("6", "read_file", ("invalid_tool_params", "bad offset"), file_path="c"),
    )
    assert get_platform("gemini").denials(output) == [
        "write_file out.txt (not offered)",
        "run_shell_command: make test (denied by policy)",
        "write_file /etc/x (outside the workspace)",
    ]


# ------------------------------------------------------------------- limit_wait


def test_limit_wait_names_the_time_and_where_it_came_from() -> None:
    text = "You've hit your weekly limit · resets Mon 12:00am (America/Los_Angeles)"
    weekly = limit_wait(UsageLimit(utc(1, 19, 8), text), NOW)
    assert weekly.retry_at == utc(1, 19, 8), "a reset days away is waited for, not clamped"
    assert weekly.reason == f"{text} (resets at 2026-01-19 08:00:00 UTC)"
    quota = limit_wait(UsageLimit(None, "Quota exceeded."), NOW)
    assert quota.retry_at == NOW + timedelta(hours=6)
    assert quota.reason == (
        "Quota exceeded. (no reset time given; retrying at 2026-01-15 23:00:00 UTC, "
        "the 6-hour fallback)"
    )
    stale = limit_wait(UsageLimit(NOW - timedelta(hours=1), "old"), NOW)
    assert stale.retry_at == NOW + timedelta(seconds=60)
    assert "reported reset 2026-01-15 16:00:00 UTC has passed" in stale.reason
    absurd = limit_wait(UsageLimit(NOW + timedelta(days=300), "misread"), NOW)
    assert absurd.retry_at == NOW + timedelta(hours=6)
    assert "is too far ahead to be right" in absurd.reason


# ------------------------------------------------------------------------- usage


SAMPLE_USAGE: list[tuple[str, HarnessUsage | None]] = [
    (
        "claude_ok_2.1.83_issue38673.jsonl",
        HarnessUsage(
            input_tokens=3,
            output_tokens=6,
            cost_usd=0.024,
            turns=1,
            duration_ms=4086,
            model="claude-opus-4-6",
        ),
    ),
    ("claude_rejected_event_paperclip5776.jsonl", None),
    (
        "claude_session_limit_2.1.220_capture.jsonl",
        HarnessUsage(duration_ms=864, model="claude-sonnet-5"),
    ),
    (
        "codex_ok_captured_53143053056.jsonl",
        HarnessUsage(input_tokens=1284, output_tokens=5, cache_read_tokens=9600, turns=1),
    ),
    (
        "codex_hybrid_stdin_notice_54875752316.txt",
        HarnessUsage(input_tokens=16731, output_tokens=12, turns=1),
    ),
    ("codex_rollout_budget_issue37676.jsonl", None),
    ("codex_turn_failed_usage_limit_sandboxed394.jsonl", None),
    (
        "gemini_auth_fail_0.50.0_verified.jsonl",
        HarnessUsage(
            input_tokens=0, output_tokens=0, cache_read_tokens=0, duration_ms=0, model="auto"
        ),
    ),
    (
        "gemini_tool_use_fixture_52212130363.jsonl",
        HarnessUsage(
            input_tokens=26928,
            output_tokens=87,
            cache_read_tokens=0,
            duration_ms=5575,
            model="auto-gemini-3",
        ),
    ),
    ("gemini_transient_capacity_then_success.txt", HarnessUsage(model="auto-gemini-3")),
    ("gemini_stderr_daily_quota_59875375351.txt", None),
    ("gemini_429_resource_exhausted_issue1800.txt", None),
]


@pytest.mark.parametrize(("sample", "expected"), SAMPLE_USAGE)
def test_each_sample_gives_its_usage(sample: str, expected: HarnessUsage | None) -> None:
    platform = get_platform(sample.split("_")[0])
    assert platform.usage((SAMPLES / sample).read_text(encoding="utf-8")) == expected


def test_every_sample_has_its_usage_checked() -> None:
    assert {name for name, _ in SAMPLE_USAGE} == {path.name for path in SAMPLES.glob("*_*")}


def events(*lines: Mapping[str, object]) -> str:
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def test_claude_usage_with_cache_and_models_and_without_a_result() -> None:
    claude = get_platform("claude")
    init = {"type": "system", "subtype": "init", "model": "claude-opus-4-6[1m]"}
    usage = {
        "input_tokens": 12,
        "output_tokens": 900,
        "cache_creation_input_tokens": 4000,
        "cache_read_input_tokens": 30000,
    }
    result = {
        "type": "result",
        "is_error": False,
        "usage": usage,
        "total_cost_usd": 1.25,
        "num_turns": 7,
        "duration_ms": 60000,
        "modelUsage": {
            "claude-haiku-4-5": {"outputTokens": 100},
            "claude-opus-4-6": {"outputTokens": 800},
        },
    }
    assert claude.usage(events(init, result)) == HarnessUsage(
        12, 900, 30000, 4000, 1.25, 7, 60000, "claude-opus-4-6"
    )
    # no result: each message's usage once (a message streamed in two events repeats it)
    first = {
        "id": "m1",
        "model": "claude-sonnet-5",
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    second = {
        "id": "m2",
        "model": "claude-sonnet-5",
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    said = [{"type": "assistant", "message": message} for message in (first, first, second)]
    limited = synthetic("You've hit your limit · resets 2pm")
    assert claude.usage(events(init, *said, limited)) == HarnessUsage(
        input_tokens=6, output_tokens=9, model="claude-sonnet-5"
    )
    assert claude.usage(events(init)) == HarnessUsage(model="claude-opus-4-6[1m]")
    assert claude.usage("crashed before printing anything\n") is None


def test_codex_usage_sums_its_turns_and_gemini_names_the_model_that_worked() -> None:
    turns = [
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 7},
        },
        {"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": 3}},
    ]
    assert get_platform("codex").usage(events(*turns)) == HarnessUsage(
        input_tokens=90, output_tokens=10, cache_read_tokens=60, turns=2
    )
    models = {"gemini-3-flash": {"output_tokens": 2}, "gemini-3-pro": {"output_tokens": 40}}
    stats = {
        "input_tokens": 500,
        "cached": 200,
        "output_tokens": 42,
        "duration_ms": 900,
        "models": models,
    }
    gemini = events(
        {"type": "init", "model": "auto"}, {"type": "result", "status": "success", "stats": stats}
    )
    assert get_platform("gemini").usage(gemini) == HarnessUsage(
        input_tokens=300,
        output_tokens=42,
        cache_read_tokens=200,
        duration_ms=900,
        model="gemini-3-pro",
    )


def test_nonsense_counts_are_not_usage() -> None:
    result = {
        "type": "result",
        "usage": {"input_tokens": -3, "output_tokens": True},
        "total_cost_usd": "1",
    }
    assert get_platform("claude").usage(events(result)) is None


def test_usage_adds_up_what_was_reported_and_nothing_else() -> None:
    """A running total: counts nobody reported stay unknown, a model shared is kept."""
    claude = HarnessUsage(input_tokens=10, output_tokens=2, cost_usd=0.5, model="opus")
    codex = HarnessUsage(input_tokens=5, cache_read_tokens=7, turns=1, model="gpt-5")
    assert claude.plus(None) == claude
    assert claude.plus(codex) == HarnessUsage(
        input_tokens=15, output_tokens=2, cache_read_tokens=7, cost_usd=0.5, turns=1
    )
    assert claude.plus(HarnessUsage(output_tokens=1)) == HarnessUsage(
        input_tokens=10, output_tokens=3, cost_usd=0.5, model="opus"
    )
