"""OpenAI Codex CLI (``codex exec``) with ``--json`` event output.

argv: ``codex exec [PERMISSION FLAGS] --json [--model M] [-c model_reasoning_effort=E]
[resume ID] -``; ``-`` makes Codex read the prompt on stdin, so neither its size nor its
first word (``-x``, ``resume``) can break the launch. ``codex exec`` never asks for
approval (it forces the ``never`` policy): what is not allowed is refused, and the run
goes on. Codex cannot be given a thread id, so a fresh run's id is read from its output.

Permissions (:mod:`canopy.permissions`), the same as root and as any other user; checked
against the real CLI (0.171.0) in ``tests/test_real_codex.py``:

- ``workspace``: ``--sandbox workspace-write --add-dir .git --skip-git-repo-check``. The
  patch tool writes only in the workdir; commands run in Codex's Linux sandbox
  (bubblewrap, the system's if installed, else its own, and a seccomp filter), which lets
  them write only in the workdir, ``/tmp`` and ``$TMPDIR``, and reach no network. Codex
  keeps a writable root's ``.git`` read-only; ``--add-dir .git`` makes it writable so the
  agent can commit (Canopy's dirty-tree guard wants each spec committed). In a linked
  worktree (``.git`` is a file) commits still fail. The sandbox runs Codex's helper
  ``codex-linux-sandbox``, which Codex links under ``$CODEX_HOME`` but not when that is
  under the temp dir; a system bubblewrap such as Debian 12's (0.8.0) then cannot start
  it: every command fails ``bwrap: execvp codex-linux-sandbox: No such file or
  directory`` and every patch ``Failed to write file``, each reported as a denial.
- ``read-only``: ``--sandbox read-only --skip-git-repo-check``: patches are rejected and
  commands run in the sandbox with nothing writable and no network, so they can read and
  nothing else.
- ``full``: ``--dangerously-bypass-approvals-and-sandbox``: no sandbox, no checks.
- ``cli``: no flags; the CLI's own settings decide (and it refuses a workdir that is not a
  git repository).

Doctor checks (:meth:`CodexPlatform.cli_checks`, no model call): ``codex --version``;
``codex login status`` ("Logged in using ChatGPT", "API key configured - sk-…", or "Not
logged in", exit 1; a key given only in the environment is not seen); and the launch argv
with nothing on stdin, which ends "No prompt provided via stdin." (exit 1) once its
options and config are accepted, and warns when Codex cannot link its sandbox helper.

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

Denials: ``--json`` prints nothing for a refused command, and a rejected patch only as a
log line on stderr, so they are read from the thread's rollout (below): in the run's turn,
each tool output that reports a rejection (``patch rejected: …``, ``… rejected by user
approval settings``, ``approval policy is Never; reject command …``) and each sandboxed
command or patch that failed with what Codex itself takes for a sandbox denial
(``Read-only file system``, ``Operation not permitted``, ``Failed to write file``, …),
one line each: the file or command, then why.

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

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from canopy.permissions import Permissions
from canopy.platforms.base import (
    CliChecks,
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
from canopy.platforms.codex_view import render_event
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
from canopy.platforms.view import LogContext, one_line

TESTED_VERSIONS = ("0.171.0",)
"""The Codex CLI releases Canopy's tests ran (``package.json`` pins the same)."""
_NO_PROMPT = re.compile(r"No prompt provided via stdin\.")
"""What ``codex exec … -`` says once it has accepted its options and config and finds no
prompt on stdin (exit 1); a refused option exits 2 with clap's ``error: …``."""
_NO_HELPER_LINKS = re.compile(r"could not create PATH aliases")
_NO_HELPER_WARNING = (
    "Codex will not link its sandbox helper while CODEX_HOME is under the temp dir; with a "
    "system bubblewrap such as Debian 12's, every sandboxed command then fails; fix: set "
    "CODEX_HOME (or TMPDIR) so that CODEX_HOME is not under TMPDIR or /tmp"
)
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
# What Codex itself takes for a sandbox denial in a failed command's output
# (codex-rs sandboxing, ``is_likely_sandbox_denied``).
_SANDBOX_DENIED = re.compile(
    r"operation not permitted|permission denied|read-only file system|seccomp|sandbox"
    r"|landlock|failed to write file",
    re.IGNORECASE,
)
_SANDBOXED = ("read-only", "workspace-write")
_EXIT_CODE = re.compile(r"^(?:Process exited with code|Exit code:) (?P<code>-?\d+)$", re.MULTILINE)
_PATCHED_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: (?P<path>[^\n\\\"]+)")
_THREAD_ID = re.compile(r"[0-9A-Za-z-]+")
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

    def cli_checks(self) -> CliChecks:
        """``codex --version`` (``codex-cli 0.171.0``); ``codex login status``, which reads
        the saved login (``$CODEX_HOME/auth.json``, ChatGPT or API key) without a model
        call; and the launch argv with nothing on stdin, which Codex parses in full
        (options, ``-c`` values, ``config.toml``) before it says "No prompt provided via
        stdin." (before any git or sign-in check, so signed out it says the same)."""
        return CliChecks(
            version=[*self.executable, "--version"],
            accepted=_NO_PROMPT,
            auth=[*self.executable, "login", "status"],
            signed_in=_signed_in,
            tested=TESTED_VERSIONS,
            warnings=((_NO_HELPER_LINKS, _NO_HELPER_WARNING),),
        )

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

    def denials(self, output: str) -> list[str]:
        """What this run's turn was refused, read from its thread's rollout (``--json``
        leaves refused commands out): one line per rejected tool call or sandboxed
        command that failed on a sandbox denial, naming the file or command first."""
        ids = map(self.session_id_from_line, reversed(output.splitlines()))
        thread_id = next(filter(None, ids), None)
        rollout = _rollout(thread_id) if thread_id else None
        if rollout is None:
            return []
        return list(_turn_denials(_last_turn(rollout)))

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

    def render_event(self, event: dict[str, Any], seen: LogContext) -> list[str]:
        """Text, tool calls and failed tool calls (:mod:`canopy.platforms.codex_view`)."""
        return render_event(event, seen)

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


def _signed_in(output: str) -> bool | None:
    """What ``codex login status`` says: "Logged in using ChatGPT" (or another method),
    "API key configured - sk-…", or "Not logged in" (exit 1). A key only in the environment
    (``CODEX_API_KEY``, a provider's ``env_key``) is not a login it knows of."""
    if "Not logged in" in output:
        return False
    if "Logged in using" in output or "API key configured" in output:
        return True
    return None


def _retry_delay(text: str) -> timedelta | None:
    """The delay a rate-limit message names ("Please try again in 11.054s"), if any."""
    found = _RETRY_DELAY.search(text)
    return parse_duration(found["delay"]) if found else None


def _rollout(thread_id: str) -> Path | None:
    """The rollout file of ``thread_id`` under ``$CODEX_HOME/sessions``, if there is one."""
    home = harness_home("CODEX_HOME", ".codex")
    if home is None or not _THREAD_ID.fullmatch(thread_id):
        return None
    pattern = _ROLLOUTS.replace("rollout-*", f"rollout-*-{thread_id}")
    try:
        return next((home / "sessions").glob(pattern), None)
    except OSError:
        return None


def _last_turn(rollout: Path) -> list[tuple[str, dict[str, Any]]]:
    """The records (type and payload) of the rollout's last turn, one ``codex exec`` run
    each, resumed or not: everything from its last ``task_started`` event on."""
    turn: list[tuple[str, dict[str, Any]]] = []
    for record in iter_jsonl(rollout):
        kind, payload = str(record.get("type")), record.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "event_msg" and payload.get("type") == "task_started":
            turn = []
        turn.append((kind, payload))
    return turn


def _turn_denials(turn: list[tuple[str, dict[str, Any]]]) -> Iterator[str]:
    """One line per refused tool call in ``turn``: what was refused, then why."""
    sandboxed = any(
        kind == "turn_context" and str_field(payload.get("sandbox_policy"), "type") in _SANDBOXED
        for kind, payload in turn
    )
    items = [payload for kind, payload in turn if kind == "response_item"]
    calls = {
        str(item.get("call_id")): item
        for item in items
        if item.get("type") in ("function_call", "custom_tool_call")
    }
    for item in items:
        if item.get("type") not in ("function_call_output", "custom_tool_call_output"):
            continue
        call = calls.get(str(item.get("call_id")), {})
        for why in _refusals(texts(item.get("output")), sandboxed):
            what = _refused(call)
            yield one_line(f"{what}: {why}" if what else why)


def _refusals(pieces: list[str], sandboxed: bool) -> Iterator[str]:
    """Why a tool call's output says it was refused: the sandbox denial a failed
    sandboxed command printed (``exec_command`` answers a text with ``Process exited with
    code``, code mode one JSON result per nested command), else a rejection line."""
    for piece in pieces:
        results = list(_command_results(piece))
        if not results:
            yield from (line.strip() for line in piece.splitlines() if _is_rejection(line))
        for code, text in results:
            denied = _SANDBOX_DENIED.search(text) if sandboxed and code != 0 else None
            if denied is not None:
                yield first_line(text[text.rfind("\n", 0, denied.start()) + 1 :])


def _is_rejection(line: str) -> bool:
    """``patch rejected: …``, ``… rejected by user approval settings``, ``approval
    policy is Never; reject command …``: a tool call Codex refused to run."""
    lowered = line.lower()
    return "reject" in lowered and ("approval" in lowered or "sandbox" in lowered)


def _command_results(piece: str) -> Iterator[tuple[int, str]]:
    """The exit code and output of each command result in a tool output piece (the patch
    tool, which writes in the sandbox too, answers ``Exit code: N``)."""
    exited = _EXIT_CODE.search(piece)
    if exited is not None:
        yield int(exited["code"]), piece.partition("\nOutput:\n")[2]
        return
    result = json_event(piece)
    if result is not None and isinstance(result.get("exit_code"), int):
        yield result["exit_code"], str(result.get("output", ""))


def _refused(call: dict[str, Any]) -> str:
    """What a refused call was: the files a patch names, or a command's command line
    (code mode's JavaScript running a command is neither; its refusal names the path)."""
    tool_input = call.get("input")
    if isinstance(tool_input, str):
        return ", ".join(found["path"].strip() for found in _PATCHED_FILE.finditer(tool_input))
    try:
        arguments = json.loads(str(call.get("arguments") or "{}"))
    except ValueError:
        return ""
    command = (
        arguments.get("cmd") or arguments.get("command") if isinstance(arguments, dict) else None
    )
    if isinstance(command, list):
        return shlex.join(map(str, command))
    return command if isinstance(command, str) else ""


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
