"""OpenAI Codex CLI (``codex exec``) with ``--json`` event output.

argv: ``codex exec [PERMISSION FLAGS] --json [--model M] [-c model_reasoning_effort=E]
[resume ID] -``; ``-`` makes Codex read the prompt on stdin, so neither its size nor its
first word (``-x``, ``resume``) can break the launch. ``codex exec`` never asks for
approval (it forces the ``never`` policy): what is not allowed is refused, and the run
goes on. Codex cannot be given a thread id, so a fresh run's id is read from its output.

Permissions (:mod:`canopy.permissions`), the same as root and as any other user; checked
against the real CLI (0.171.0) in ``tests/test_real_codex.py``:

- ``workspace``: ``--sandbox workspace-write --add-dir .git --skip-git-repo-check``. The
  patch tool writes only in the workdir; commands run in Codex's Linux sandbox (bundled
  bubblewrap namespaces and a seccomp filter), which lets them write only in the workdir,
  ``/tmp`` and ``$TMPDIR``, and reach no network. Codex keeps a writable root's ``.git`` read-only;
  ``--add-dir .git`` makes it writable so the agent can commit (Canopy's dirty-tree guard
  wants each spec committed). In a linked worktree (``.git`` is a file) commits still fail.
- ``read-only``: ``--sandbox read-only --skip-git-repo-check``: patches are rejected and
  commands run in the sandbox with nothing writable and no network, so they can read and
  nothing else.
- ``full``: ``--dangerously-bypass-approvals-and-sandbox``: no sandbox, no checks.
- ``cli``: no flags; the CLI's own settings decide (and it refuses a workdir that is not a
  git repository).

Session id: ``thread_id`` of the ``thread.started`` event. Usage limit: the message of an
``error`` or ``turn.failed`` event (or a plain-text line) saying "You've hit your usage
limit. … try again at 3:05 PM." (local time; ``Sep 18th, 2025 3:05 PM`` when the reset is
on another day) or, in older releases, "… try again in 2 hours 5 minutes."; a hard quota
("Quota exceeded. Check your plan and billing details.") is a limit with no reset. An API
key's rate limit is ``exceeded retry limit, last status: 429 Too Many Requests`` (after
five retries) or ``rate limit exceeded: … Please try again in 11.054s.``: a ``rate``
limit.

Retries: Codex retries a failed request itself and says so in ``error`` events,
``Reconnecting... 2/5 (<why>)`` (five times, then the turn fails) and, when it cannot
connect at all, ``Reconnecting... waiting for network (<why>)`` for as long as it runs.

Reply: the ``text`` of the last ``item.completed`` item of type ``agent_message``.

Conversations: ``$CODEX_HOME`` (default ``~/.codex``) ``/sessions/YYYY/MM/DD/rollout-
<YYYY-MM-DDThh-mm-ss>-<thread uuid>.jsonl`` (local date and time; ``exec resume`` appends
to the same file). Each line is ``{"timestamp", "type", "payload"}``; the first is a
``session_meta`` whose payload has the thread ``id``, ``cwd`` and ``timestamp``. The
title is the first ``event_msg`` ``user_message`` or ``response_item`` user message that
Codex did not inject itself (``<environment_context>``, ``# AGENTS.md instructions …``
and the other tag-wrapped context blocks). Subagent threads and archived sessions
(``archived_sessions/``) are not listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from canopy.permissions import Permissions
from canopy.platforms.base import (
    HarnessConversation,
    Invocation,
    JsonLinesPlatform,
    RetryNotice,
    UsageLimit,
    first_line,
    json_event,
    json_events,
    nonblank,
    option,
    str_field,
)
from canopy.platforms.history import (
    harness_home,
    is_workdir,
    iter_jsonl,
    modified_at,
    newest_first,
    parse_timestamp,
    resolved,
    texts,
    title_of,
)
from canopy.platforms.resets import MONTH_PATTERN, clock_reset, parse_duration
from canopy.platforms.usage import HarnessUsage, count, events_of, total

_LIMIT_TEXT = re.compile(
    r"(?:hit|reached) your usage limit|usage_limit_reached"
    r"|workspace usage limit has been reached|quota exceeded\. check your plan",
    re.IGNORECASE,
)
# "try again at 3:05 PM", "… at 3:05PM", "… at Apr 28th, 2026 10:03 PM" (local time).
_TRY_AT = re.compile(
    r"try again at\s+"
    rf"(?:(?P<month>{MONTH_PATTERN})[a-z]*\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+"
    r"(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<meridiem>[ap])\.?m\b",
    re.IGNORECASE,
)
_TRY_IN = re.compile(r"try again in\s+(?P<duration>[^.!\n]+)", re.IGNORECASE)
# An API key's rate limit: the HTTP 429 after Codex's five retries, or a stream's
# ``rate_limit_exceeded`` failure ("… Please try again in 11.054s.").
_RATE_TEXT = re.compile(
    r"exceeded retry limit, last status: 429|rate limit exceeded", re.IGNORECASE
)
_RETRY_DELAY = re.compile(r"try again in (?P<delay>\d+(?:\.\d+)?\s*m?s)\b", re.IGNORECASE)
# "Reconnecting... 2/5 (…)" and "Reconnecting... waiting for network (…)".
_RECONNECTING = re.compile(r"Reconnecting\.\.\.\s")
_PERMISSION_FLAGS: dict[Permissions, tuple[str, ...]] = {
    "workspace": ("--sandbox", "workspace-write", "--add-dir", ".git", "--skip-git-repo-check"),
    "read-only": ("--sandbox", "read-only", "--skip-git-repo-check"),
    "full": ("--dangerously-bypass-approvals-and-sandbox",),
    "cli": (),
}
_ROLLOUTS = "[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/rollout-*.jsonl"
# Context Codex injects as user messages: a whole text wrapped in one tag
# (<environment_context>…</environment_context>, <user_instructions>, <skill>, …) or the
# AGENTS.md preamble. Such a message is never the user's prompt.
_INJECTED = re.compile(
    r"\s*(?:<(?P<tag>[A-Za-z_][\w-]*)>.*</(?P=tag)>"
    r"|# AGENTS\.md instructions for .*</INSTRUCTIONS>)\s*$",
    re.DOTALL | re.IGNORECASE,
)
# IDE clients put their context first and the prompt after this marker.
_USER_MESSAGE_BEGIN = "## My request for Codex:"


@dataclass(frozen=True)
class CodexPlatform(JsonLinesPlatform):
    """Codex CLI in non-interactive ``exec`` mode."""

    name: str = "codex"
    executable: tuple[str, ...] = ("codex",)
    extra_args: tuple[str, ...] = ()

    def build_invocation(
        self,
        prompt: str,
        *,
        model: str | None,
        effort: str | None,
        resume_session_id: str | None,
        permissions: Permissions,
        session_id: str | None = None,
    ) -> Invocation:
        """``codex exec [permission flags] --json [options] [resume ID] -``, the prompt
        on stdin; the flags go before ``resume``, which takes them as well."""
        effort_override = f"model_reasoning_effort={effort}" if effort else None
        resume = ["resume", resume_session_id] if resume_session_id else []
        argv = [
            *self.executable,
            "exec",
            *self.extra_args,
            *_PERMISSION_FLAGS[permissions],
            "--json",
            *option("--model", model),
            *option("-c", effort_override),
            *resume,
            "-",
        ]
        return Invocation(argv, stdin=prompt)

    def session_id_from_line(self, line: str) -> str | None:
        """``thread_id`` of ``thread.started`` (a resumed thread keeps its id)."""
        event = json_event(line)
        if event is None or event.get("type") != "thread.started":
            return None
        return str_field(event, "thread_id")

    def succeeded(self, event: dict[str, Any]) -> bool:
        """``turn.completed``: the turn ran to its end."""
        return event.get("type") == "turn.completed"

    def error_text(self, event: dict[str, Any]) -> str | None:
        """The message of an ``error`` event or of a ``turn.failed`` event's ``error``;
        a ``Reconnecting...`` notice is a retry, not a failure."""
        if event.get("type") == "error":
            message = str_field(event, "message")
            return None if message is None or _RECONNECTING.match(message) else message
        if event.get("type") == "turn.failed":
            return str_field(event.get("error"), "message")
        return None

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """A "you've hit your usage limit" message, reset "at <time>" or "in <duration>";
        a hard quota ("Quota exceeded. Check your plan …") is a limit with no reset. An
        API key's rate limit is a ``rate`` limit, reset when it names a delay."""
        if _LIMIT_TEXT.search(text):
            return UsageLimit(_reset(text, now), first_line(text))
        if _RATE_TEXT.search(text):
            delay = _retry_delay(text)
            reset = now + delay if delay is not None else None
            return UsageLimit(reset, first_line(text), kind="rate")
        return None

    def retry_notice(self, line: str) -> RetryNotice | None:
        """An ``error`` event ``Reconnecting... 2/5 (…)`` or ``Reconnecting... waiting for
        network (…)``; the wait is the delay a rate-limited stream names, if any."""
        event = json_event(line)
        message = str_field(event, "message") if event and event.get("type") == "error" else None
        if message is None or not _RECONNECTING.match(message):
            return None
        return RetryNotice(message, _retry_delay(message))

    def reply_text(self, output: str) -> str | None:
        """The last completed ``agent_message`` item's text."""
        for event in reversed(json_events(output)):
            item = event.get("item") if event.get("type") == "item.completed" else None
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = nonblank(str_field(item, "text"))
                if text is not None:
                    return text
        return None

    def usage_in_events(self, events: list[dict[str, Any]]) -> HarnessUsage:
        """Each ``turn.completed``'s ``usage`` summed, one turn each. Codex counts cached
        input inside ``input_tokens``; it is reported apart, as cache reads. ``exec
        --json`` names no model and prices nothing."""
        usages = [event.get("usage") for event in events_of(events, "turn.completed")]
        cached = total([count(u, "cached_input_tokens") for u in usages])
        inputs = total([count(u, "input_tokens") for u in usages])
        return HarnessUsage(
            input_tokens=None if inputs is None else max(0, inputs - (cached or 0)),
            output_tokens=total([count(u, "output_tokens") for u in usages]),
            cache_read_tokens=cached,
            turns=len(usages) or None,
        )

    def conversations(self, workdir: Path) -> list[HarnessConversation]:
        """Rollouts under ``sessions/`` whose ``session_meta`` cwd is ``workdir``."""
        home = harness_home("CODEX_HOME", ".codex")
        if home is None:
            return []
        target = resolved(workdir)
        try:
            rollouts = sorted((home / "sessions").glob(_ROLLOUTS))
        except OSError:
            return []
        return newest_first(_thread(path, target) for path in rollouts)


def _retry_delay(text: str) -> timedelta | None:
    """The delay a rate-limit message names ("Please try again in 11.054s"), if any."""
    found = _RETRY_DELAY.search(text)
    return parse_duration(found["delay"]) if found else None


def _reset(text: str, now: datetime) -> datetime | None:
    """The reset a Codex limit message names; ``None`` for "Try again later."."""
    at = _TRY_AT.search(text)
    if at is not None:
        return clock_reset(now, at)
    within = _TRY_IN.search(text)
    delay: timedelta | None = parse_duration(within["duration"]) if within else None
    return now + delay if delay is not None else None


def _thread(path: Path, workdir: Path) -> HarnessConversation | None:
    """The thread in one rollout if it ran in ``workdir``; ``None`` if not, or unreadable."""
    events = iter_jsonl(path)
    meta = _session_meta(next(events, None))
    if meta is None or not is_workdir(meta.get("cwd"), workdir) or _is_subagent(meta):
        return None
    thread_id = str_field(meta, "id")
    if thread_id is None:
        return None
    return HarnessConversation(
        conversation_id=thread_id,
        workdir=str(meta["cwd"]),
        started_at=parse_timestamp(meta.get("timestamp")),
        updated_at=modified_at(path),
        title=next(filter(None, map(_prompt, events)), ""),
    )


def _session_meta(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The payload of the ``session_meta`` record every rollout starts with."""
    if record is None or record.get("type") != "session_meta":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def _is_subagent(meta: dict[str, Any]) -> bool:
    """A thread spawned by another thread's agent (``"source": {"subagent": …}``)."""
    source = meta.get("source")
    return isinstance(source, dict) and "subagent" in source


def _prompt(record: dict[str, Any]) -> str:
    """The title a user message record gives, ``""`` for anything else or injected context."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return ""
    if record.get("type") == "event_msg" and payload.get("type") == "user_message":
        pieces = texts(payload.get("message"))
    elif record.get("type") == "response_item" and payload.get("role") == "user":
        pieces = texts(payload.get("content"))
    else:
        return ""
    typed = (_strip_ide_context(text) for text in pieces if not _INJECTED.match(text))
    return next(filter(None, map(title_of, typed)), "")


def _strip_ide_context(text: str) -> str:
    """The prompt after an IDE client's ``## My request for Codex:`` marker, if any."""
    _, marker, request = text.partition(_USER_MESSAGE_BEGIN)
    return request if marker else text
