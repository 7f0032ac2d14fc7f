"""Google Gemini CLI (``gemini``) in headless mode with ``stream-json`` output.

argv: ``gemini --output-format stream-json PERMISSIONS [-m M] [--resume ID | --session-id
ID]``, the prompt on stdin (Gemini CLI runs headless when stdin is not a terminal and
takes it as the prompt), so neither its size nor a leading ``-`` can break the launch.
Gemini CLI has no per-run effort flag (thinking budgets live in its settings), so
``effort`` is not passed. A fresh run takes the session id Canopy chose
(``--session-id``, a UUID).

Permissions (the same as root and as any other user; Gemini CLI does not look at the uid):

- ``workspace`` and ``full``: ``--skip-trust --approval-mode yolo``. Every tool runs
  unasked. Its file tools refuse paths outside the workdir (and the CLI's own temp dir),
  but shell commands run unconfined with the user's rights: Gemini CLI's only sandboxes
  are ``--sandbox`` (a docker or podman container, pulled from the network) and the
  settings-only ``security.toolSandboxing`` (bubblewrap), so Canopy has none to switch on
  and the two levels are the same.
- ``read-only``: ``--skip-trust --approval-mode default --policy <Canopy's read-only
  policy>``. Headless, the default mode does not even offer the write and shell tools,
  but it does offer ``enter_plan_mode``, and in plan mode ``exit_plan_mode`` switches a
  headless run to YOLO: a model can write a plan file, leave plan mode and run anything.
  The policy (:data:`READ_ONLY_POLICY`, user tier, so it beats the default rules and the
  workdir's own ``.gemini/policies``) denies every tool but those that read or search.
  ``--policy`` replaces the user's own ``~/.gemini/policies`` for that run.
- ``cli``: nothing, not even ``--skip-trust``: the CLI's own settings decide, trust
  included, so a workdir never trusted there fails at once (exit 55).

Trust: headless Gemini CLI exits 55 ("not running in a trusted directory") before any
request in a workdir the user never trusted; ``--skip-trust`` trusts it for the run (the
documented alternative, ``GEMINI_CLI_TRUST_WORKSPACE=true``, would leak into every
command the agent runs). A trusted workdir's ``.gemini/`` settings, hooks, MCP servers,
commands and policies are loaded: a repository's own configuration can run programs at
startup, even under ``read-only``.

Session id: ``session_id`` of the ``init`` event. Usage limit: an error ``result`` of type
``TerminalQuotaError``, or an ``error`` event, an error ``result`` or a plain-text line
naming an exhausted quota ("You have exhausted your capacity on this model. Your quota
will reset after 4h28m20s.", "Quota exceeded … Please retry in 42s", ``RESOURCE_EXHAUSTED``,
``"retryDelay": "58s"``), its reset read wherever the failure output gives one (the daily
quota's "Please retry in 7200s." is only in the stack trace on stderr); never an attempt
the CLI retried by itself ("Attempt 1 failed: … Retrying after 5042ms...", with the stack
trace that may follow it). A daily quota, exhausted capacity or a reset over five minutes
away is a usage window; a shorter or unnamed wait, a per-minute rate limit.

Denials: ``tool_result`` events with status ``error`` whose ``error.type`` says the tool
was refused: ``tool_not_registered`` (not offered at this level), ``policy_violation``, or
a path outside the workspace. Retry notices: the stderr lines ending an attempt the CLI
retries itself, "Retrying after 7228060ms..." (the wait) or "Retrying with backoff...".

Reply: the assistant ``message`` deltas of the run's last model turn, concatenated (those
after the last user ``message``, ``tool_use`` or ``tool_result`` event); text streamed
before a tool call is the model narrating its work. Gemini CLI's own ``--output-format
json`` ``response`` holds the same last-turn text.

Conversations: ``$GEMINI_CLI_HOME`` (default: the user's home) ``/.gemini/tmp/<project>/
chats/session-<YYYY-MM-DDThh-mm>-<first 8 chars of the session id>.jsonl`` (``.json``
before April 2026). ``<project>`` is the short id ``.gemini/projects.json`` maps the
project root (the cwd Gemini CLI ran in) to, which also names the root in the
directory's ``.project_root`` file; before February 2026 it was the sha256 hex digest of
the root path, and such directories are still read. A ``.json`` file is one object
``{sessionId, projectHash, startTime, lastUpdated, messages: [{id, timestamp, type:
"user" | "gemini" | …, content}]}``; a ``.jsonl`` file is that metadata on its first
line, then message records (a repeated ``id`` replaces the earlier one), ``{"$set": …}``
metadata updates and ``{"$rewindTo": id}`` truncations. Subagent sessions and sessions
Gemini CLI would not resume are not listed: those without a prompt or reply (a resumed run
leaves one holding only the injected ``<session_context>``); titles skip slash commands,
``?`` and injected ``<session_context>``/``<hook_context>`` blocks, as its own picker does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from canopy.errors import Refused
from canopy.paths import canopy_home
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
    split_output,
    str_field,
)
from canopy.platforms.gemini_view import call_target, render_event
from canopy.platforms.history import (
    env_dir,
    list_dir,
    modified_at,
    newest_first,
    parse_timestamp,
    read_json,
    read_text,
    resolved,
    texts,
    title_of,
    user_home,
)
from canopy.platforms.resets import parse_duration
from canopy.platforms.usage import HarnessUsage, count, events_of, main_model
from canopy.platforms.view import LogContext, one_line

_LIMIT_TEXT = re.compile(
    r"RESOURCE_EXHAUSTED|quota exceeded|exceeded your current quota|TerminalQuotaError"
    r"|exhausted your (?:capacity|quota|daily quota)|resource (?:has been )?exhausted"
    r"|reached your daily [\w.-]+ quota",
    re.IGNORECASE,
)
_RESET = re.compile(
    r"(?:reset after|retry (?:in|after)|retryDelay\W*)\s*"
    r"(?P<duration>\d[\d.]*\s*(?:[hms]+\s*\d[\d.]*\s*)*[hms]+)",
    re.IGNORECASE,
)
_USAGE_WINDOW = re.compile(
    r"TerminalQuotaError|exhausted your (?:capacity|quota|daily quota)|daily [\w.-]* ?quota",
    re.IGNORECASE,
)
_LONGEST_RETRY = timedelta(seconds=300)
"""Gemini CLI retries a quota error itself when the API asks for at most this wait (its
``MAX_RETRYABLE_DELAY_SECONDS``); a longer one is a window it gives up on."""
# Gemini CLI retries quota, capacity, 5xx and network errors itself, logging each failed
# attempt ("Attempt 1 failed: … Retrying after 5042ms...", over several lines when the
# error has them, then for some the error's stack trace: "at …" frames and the error's
# fields in braces); only the error it gives up on is the run's failure.
_RETRY_START = re.compile(r"^Attempt \d+ failed\b")
_RETRY_END = re.compile(r"\bRetrying\b")
TESTED_VERSIONS = ("0.61.0",)
"""The Gemini CLI releases Canopy's tests ran (package.json pins the first)."""
_NO_INPUT = re.compile(r"No input provided via stdin")
_NO_AUTH = re.compile(r"Please set an Auth method|must specify the GEMINI_API_KEY")
_RETRY_NOTICE = re.compile(r"\bRetrying (?:after (?P<ms>\d+)ms|with backoff)\.\.\.")
_STACK_FRAME = "at "
_REFUSALS = {
    "tool_not_registered": "not offered",
    "policy_violation": "denied by policy",
    "path_not_in_workspace": "outside the workspace",
}
_OUTSIDE_WORKSPACE = "Path not in workspace"
_TERMINAL_QUOTA = "TerminalQuotaError"
_CHAT_FILE = re.compile(r"session-.+\.jsonl?")
_PROJECT_ID = re.compile(r"[a-z0-9-]+")
_NOT_A_PROMPT = ("/", "?", "<session_context>", "<hook_context>")
_TURN_BREAKS = ("message", "tool_use", "tool_result")


READ_ONLY_POLICY = """\
# Canopy's read-only level for Gemini CLI (--policy): read and search, never write or run.
# Written by Canopy and rewritten whenever it differs; edits here do not last.
[[rule]]
toolName = "*"
decision = "deny"
priority = 900
denyMessage = "Canopy runs this agent read-only: it may read and search, never write or run."

[[rule]]
toolName = [
  "read_file", "list_directory", "glob", "grep_search", "google_web_search", "update_topic",
]
decision = "allow"
priority = 950
"""
"""Deny every tool, then allow those that only read the workspace or search the web (a
subset of what Gemini CLI's own ``read-only.toml`` allows). A denied tool is not even
offered to the model, so the plan-mode tools that would switch a headless run to YOLO are
gone too."""


@dataclass(frozen=True)
class GeminiPlatform(JsonLinesPlatform):
    """Gemini CLI in non-interactive (``--prompt``) mode."""

    takes_session_id: ClassVar[bool] = True

    name: str = "gemini"
    executable: tuple[str, ...] = ("gemini",)
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
        """``gemini --output-format stream-json PERMISSIONS [-m M] [--resume ID |
        --session-id ID]``, the prompt on stdin."""
        session = (
            option("--resume", resume_session_id)
            if resume_session_id
            else option("--session-id", session_id)
        )
        argv = [
            *self.executable,
            *self.extra_args,
            "--output-format",
            "stream-json",
            *_permission_flags(permissions),
            *option("-m", model),
            *session,
        ]
        return Invocation(argv, stdin=prompt)

    def session_id_from_line(self, line: str) -> str | None:
        """``session_id`` of the ``init`` event."""
        event = json_event(line)
        if event is None or event.get("type") != "init":
            return None
        return str_field(event, "session_id")

    def succeeded(self, event: dict[str, Any]) -> bool:
        """A ``result`` event with status ``success``."""
        return event.get("type") == "result" and event.get("status") == "success"

    def error_text(self, event: dict[str, Any]) -> str | None:
        """The message of an ``error`` event or of an error ``result``'s ``error``."""
        if event.get("type") == "error":
            return str_field(event, "message")
        if event.get("type") == "result" and event.get("status") == "error":
            return str_field(event.get("error"), "message")
        return None

    def usage_limit(self, output: str, now: datetime) -> UsageLimit | None:
        """The limit as every adapter reads it, its reset taken from any of the run's
        failure texts when the one naming the limit gives none: Gemini CLI reports its
        daily quota as "You have exhausted your daily quota on this model." and prints the
        API's "Please retry in 7200s." only in that error's stack trace, on stderr."""
        found = super().usage_limit(output, now)
        if found is None or found.reset_at is not None:
            return found
        events, plain = split_output(output)
        texts = [*filter(None, map(self.error_text, events)), *self.failure_lines(plain)]
        delay = next((wait for wait in map(_reset_delay, texts) if wait is not None), None)
        if delay is None:
            return found
        usage = found.kind == "usage" or delay > _LONGEST_RETRY
        return UsageLimit(now + delay, found.message, "usage" if usage else "rate")

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """An exhausted-quota message, with "reset after"/"retry in" as the reset: a usage
        window when it names a daily quota or exhausted capacity or its reset is over five
        minutes away, else an API rate limit (Gemini CLI's own split)."""
        if not _LIMIT_TEXT.search(text):
            return None
        delay = _reset_delay(text)
        usage = _USAGE_WINDOW.search(text) or (delay is not None and delay > _LONGEST_RETRY)
        reset = now + delay if delay is not None else None
        return UsageLimit(reset, first_line(text), "usage" if usage else "rate")

    def failure_lines(self, plain: list[str]) -> list[str]:
        """The plain lines without the retried attempts Gemini CLI recovers from by itself,
        their stack traces included."""
        kept: list[str] = []
        retrying: list[str] = []
        trace: int | None = None  # inside a retried attempt's trace: its open braces
        for text in plain:
            if trace is not None and (trace > 0 or text.startswith(_STACK_FRAME)):
                trace += _nesting(text)
                continue
            trace = None
            if retrying or _RETRY_START.match(text):
                retrying.append(text)
                if _RETRY_END.search(text):
                    retrying, trace = [], _nesting(text)
            else:
                kept.append(text)
        return kept + retrying  # an attempt never retried is the failure after all

    def retry_notice(self, line: str) -> RetryNotice | None:
        """The stderr line ending an attempt Gemini CLI retries by itself: "… Retrying
        after 7228060ms..." (the wait) or "… Retrying with backoff..." (none named). Where
        the line also names the reset ("Your quota will reset after 2h0m0s."), that is the
        wait: the CLI sleeps up to a fifth longer, to spread its retries."""
        found = _RETRY_NOTICE.search(line) if json_event(line) is None else None
        if found is None:
            return None
        reset = _RESET.search(line)
        wait = parse_duration(reset["duration"]) if reset else None
        if wait is None and found["ms"]:
            wait = timedelta(milliseconds=int(found["ms"]))
        return RetryNotice(first_line(line), wait)

    def cli_checks(self) -> CliChecks:
        """``gemini --version`` and the launch argv with no prompt: Gemini CLI checks its
        options, then who is signed in ("Please set an Auth method …", exit 41), then says
        no input was given. It has no sign-in command: a configured key counts as signed
        in, whether or not the key is valid."""
        return CliChecks(
            version=[*self.executable, "--version"],
            accepted=_NO_INPUT,
            signed_out=_NO_AUTH,
            tested=TESTED_VERSIONS,
        )

    def denials(self, output: str) -> list[str]:
        """Each refused tool call, in order: ``write_file app.py (not offered)``,
        ``run_shell_command: make (denied by policy)``; the call's name and arguments come
        from its ``tool_use`` event."""
        events = json_events(output)
        calls = {event.get("tool_id"): event for event in events if event.get("type") == "tool_use"}
        refused = [(event, _refusal(event)) for event in events]
        return [
            _denial_line(calls.get(event.get("tool_id"), {}), reason)
            for event, reason in refused
            if reason is not None
        ]

    def limit_in_events(self, events: list[dict[str, Any]]) -> UsageLimit | None:
        """An error ``result`` whose ``error.type`` is ``TerminalQuotaError``."""
        for event in events:
            error = event.get("error") if event.get("type") == "result" else None
            if str_field(error, "type") == _TERMINAL_QUOTA:
                return UsageLimit(None, str_field(error, "message") or _TERMINAL_QUOTA)
        return None

    def reply_text(self, output: str) -> str | None:
        """The assistant deltas after the last user message or tool round trip, joined."""
        turn: list[str] = []
        for event in json_events(output):
            if event.get("type") == "message" and event.get("role") == "assistant":
                turn.append(str_field(event, "content") or "")
            elif event.get("type") in _TURN_BREAKS:
                turn = []
        return nonblank("".join(turn))

    def usage_in_events(self, events: list[dict[str, Any]]) -> HarnessUsage:
        """The final ``result``'s ``stats``: ``input`` (uncached input; older releases:
        ``input_tokens`` less ``cached``), ``output_tokens``, ``cached``, ``duration_ms``.
        The model: the one ``stats.models`` credits with most output, else the init
        event's (``auto`` when Gemini CLI chooses). Gemini CLI prices nothing."""
        results = events_of(events, "result")
        stats = results[-1].get("stats") if results else None
        cached = count(stats, "cached")
        prompt = count(stats, "input_tokens")
        uncached = count(stats, "input")
        if uncached is None and prompt is not None:
            uncached = max(0, prompt - (cached or 0))
        init = next(iter(events_of(events, "init")), {})
        model = main_model(
            stats.get("models") if isinstance(stats, dict) else None, "output_tokens"
        )
        return HarnessUsage(
            input_tokens=uncached,
            output_tokens=count(stats, "output_tokens"),
            cache_read_tokens=cached,
            duration_ms=count(stats, "duration_ms"),
            model=model or str_field(init, "model"),
        )

    def render_event(self, event: dict[str, Any], seen: LogContext) -> list[str]:
        """Text, tool calls and failed tool calls (:mod:`canopy.platforms.gemini_view`)."""
        return render_event(event, seen)

    def conversations(self, workdir: Path) -> list[HarnessConversation]:
        """Chat sessions in the project directories Gemini CLI used for ``workdir``."""
        gemini = _gemini_dir()
        if gemini is None:
            return []
        target = resolved(workdir)
        chats = [
            path
            for folder in _project_dirs(gemini, target)
            for path in list_dir(folder / "chats")
            if _CHAT_FILE.fullmatch(path.name)
        ]
        return newest_first(_session(path, target) for path in chats)


def _permission_flags(permissions: Permissions) -> list[str]:
    """The flags for a permission level (see the module docstring); ``cli`` passes none."""
    if permissions == "cli":
        return []
    if permissions == "read-only":
        policy = ["--approval-mode", "default", "--policy", str(read_only_policy())]
        return ["--skip-trust", *policy]
    return ["--skip-trust", "--approval-mode", "yolo"]


def read_only_policy() -> Path:
    """:data:`READ_ONLY_POLICY` as a file Gemini CLI can load: ``<data dir>/platforms/
    gemini-read-only.toml``, (re)written atomically whenever it is missing or differs, so
    a package install needs no data file and a tampered copy does not last. Gemini CLI
    ignores a ``--policy`` path it cannot find, so the file must exist at launch."""
    path = canopy_home() / "platforms" / "gemini-read-only.toml"
    if "," in str(path):  # Gemini CLI would split it into two paths, load neither, deny nothing
        raise Refused(
            f"permissions 'read-only' cannot run Gemini CLI: its policy path {path} holds a comma"
        )
    if read_text(path) != READ_ONLY_POLICY:
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_name(f".{path.name}.{os.getpid()}")
        written.write_text(READ_ONLY_POLICY, encoding="utf-8")
        written.replace(path)
    return path


def _reset_delay(text: str) -> timedelta | None:
    """The wait a failure text names ("reset after 2h0m0s", "retry in 42s", "retryDelay")."""
    found = _RESET.search(text)
    return parse_duration(found["duration"]) if found else None


def _nesting(text: str) -> int:
    """How a line of a printed error changes its brace depth (``cause: {`` / ``},``)."""
    return int(text.endswith(("{", "["))) - int(text.startswith(("}", "]")))


def _refusal(event: dict[str, Any]) -> str | None:
    """Why a failed ``tool_result`` was refused, or ``None`` for any other event or error."""
    if event.get("type") != "tool_result" or event.get("status") != "error":
        return None
    error = event.get("error")
    kind = str_field(error, "type") or ""
    if (str_field(error, "message") or "").startswith(_OUTSIDE_WORKSPACE):
        kind = "path_not_in_workspace"
    return _REFUSALS.get(kind)


def _denial_line(call: dict[str, Any], reason: str) -> str:
    """``TOOL: COMMAND (reason)`` or ``TOOL TARGET (reason)``, cut to one short line."""
    name = str_field(call, "tool_name") or "a tool"
    arguments = call.get("parameters")
    command = str_field(arguments, "command")
    target = call_target(arguments)
    if command is not None:
        return one_line(f"{name}: {command} ({reason})")
    return one_line(f"{name} {target} ({reason})" if target else f"{name} ({reason})")


def _gemini_dir() -> Path | None:
    """``$GEMINI_CLI_HOME/.gemini``, the variable standing in for the home directory."""
    home = env_dir("GEMINI_CLI_HOME") or user_home()
    return home / ".gemini" if home is not None else None


def _project_dirs(gemini: Path, workdir: Path) -> list[Path]:
    """``tmp/<id>`` for every id the project root has had: registered, marked, legacy hash.

    The registry is Gemini CLI's own lookup; a ``.project_root`` marker names the owner
    of a directory even when the registry was reset; the sha256 directory is where
    sessions lived before short ids (Gemini CLI copies it over, leaving the original).
    """
    tmp = gemini / "tmp"
    root = str(workdir)
    legacy = hashlib.sha256(root.encode()).hexdigest()
    marked = [entry.name for entry in list_dir(tmp) if _owner(entry) == workdir]
    registered = _registered(gemini, root)
    if registered is not None and _owner(tmp / registered) not in (None, workdir):
        registered = None  # a stale entry: the directory now belongs to another project
    names = [registered, legacy, *marked]
    return [tmp / name for name in dict.fromkeys(names) if name]


def _registered(gemini: Path, root: str) -> str | None:
    """The short id ``projects.json`` gives the project root (a safe name, or ``None``)."""
    registry = read_json(gemini / "projects.json")
    projects = registry.get("projects") if isinstance(registry, dict) else None
    name = str_field(projects, root)
    return name if name is not None and _PROJECT_ID.fullmatch(name) else None


def _owner(folder: Path) -> Path | None:
    """The project root a directory's ``.project_root`` marker names, resolved."""
    text = (read_text(folder / ".project_root") or "").strip()
    return resolved(text) if text else None


@dataclass
class _Chat:
    """A session file folded the way Gemini CLI loads it: metadata plus live messages."""

    meta: dict[str, Any] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, record: dict[str, Any]) -> None:
        """Apply one record: a rewind, a message, a metadata update or the metadata."""
        update = record.get("$set")
        if isinstance(record.get("$rewindTo"), str):
            self._rewind(record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            self.messages[record["id"]] = record
        elif isinstance(update, dict):
            self._merge(update)
        elif str_field(record, "sessionId"):
            self._merge(record)

    def _merge(self, fields: dict[str, Any]) -> None:
        """Metadata fields; a ``messages`` list (legacy file, checkpoint) replaces them all."""
        messages = fields.get("messages")
        if isinstance(messages, list):
            found = [message for message in messages if isinstance(message, dict)]
            self.messages = {str(m.get("id", n)): m for n, m in enumerate(found)}
        self.meta.update((key, value) for key, value in fields.items() if key != "messages")

    def _rewind(self, message_id: str) -> None:
        """Drop ``message_id`` and everything after it (everything, if it is unknown)."""
        ids = list(self.messages)
        kept = ids[: ids.index(message_id)] if message_id in self.messages else []
        self.messages = {key: self.messages[key] for key in kept}


def _session(path: Path, workdir: Path) -> HarnessConversation | None:
    """The conversation in one session file; ``None`` if unreadable, empty or a subagent's."""
    chat = _Chat()
    for record in _records(path) or []:
        chat.add(record)
    session_id = str_field(chat.meta, "sessionId")
    messages = list(chat.messages.values())
    if session_id is None or chat.meta.get("kind") == "subagent":
        return None
    if not any(map(_resumable, messages)):
        return None  # Gemini CLI refuses it: "No previous sessions found" (exit 42)
    return HarnessConversation(
        conversation_id=session_id,
        workdir=str(workdir),
        started_at=parse_timestamp(chat.meta.get("startTime")),
        updated_at=parse_timestamp(chat.meta.get("lastUpdated")) or modified_at(path),
        title=next(filter(None, map(_prompt, messages)), ""),
    )


def _records(path: Path) -> list[dict[str, Any]] | None:
    """A session file's records: one pretty-printed object (legacy) or JSON lines."""
    text = read_text(path)
    if text is None:
        return None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    return [record for record in map(json_event, text.splitlines()) if record is not None]


def _resumable(message: dict[str, Any]) -> bool:
    """Whether Gemini CLI counts this message as something to resume: a real prompt, or a
    reply with text, tool calls or thoughts (its ``isResumableMessageRecord``)."""
    if message.get("type") == "user":
        return bool(_prompt(message))
    if message.get("type") != "gemini":
        return False
    spoken = "".join(texts(message.get("content"))).strip()
    return bool(spoken or message.get("toolCalls") or message.get("thoughts"))


def _prompt(message: dict[str, Any]) -> str:
    """The title a user message gives; ``""`` for commands, injected context and the rest."""
    text = "".join(texts(message.get("content"))) if message.get("type") == "user" else ""
    return "" if text.strip().startswith(_NOT_A_PROMPT) else title_of(text)
