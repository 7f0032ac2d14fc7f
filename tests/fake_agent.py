#!/usr/bin/env python3
"""A stand-in for the ``claude``, ``codex`` and ``gemini`` CLIs, for tests.

It accepts each CLI's headless argv and prints that CLI's JSON-lines output (session or
thread id: the resumed id, ``--session-id`` (Claude, Gemini), else a fresh uuid4), so the
real platform adapters parse it.
Point a built-in platform at it with ``[platforms.claude] executable = [python, path]``.

Format: ``$FAKE_AGENT_FORMAT`` (claude | codex | gemini) if set, else ``codex`` when
argv starts with ``exec``, ``claude`` when it has ``--verbose``, else ``gemini``. Unknown
options exit 2, as the real CLIs do, so a wrong argv fails loudly.

Behaviour is steered by directives: prompt lines ``FAKE: <verb> <args>`` and the lines of
``$FAKE_AGENT_DIRECTIVES`` (``FAKE:`` optional there; those run first), in order:

- ``write PATH TEXT`` / ``append PATH TEXT``: write (or append) TEXT and a newline to PATH
  (relative to the cwd; parent directories are created)
- ``commit MESSAGE``: ``git add -A`` and commit (own identity, ``--allow-empty`` so a
  retried run does not fail on an already-committed change)
- ``say TEXT``: an assistant message; ``stderr TEXT``: a line on stderr
- ``sleep SECONDS``; ``hang``: sleep until killed (after the session id is printed)
- ``wait-for PATH``: sleep until file PATH exists (a test lets the run go on)
- ``replay PATH``: print the lines of PATH, a real CLI's recorded output, as they are
- ``usage INPUT OUTPUT [CACHED] [COST]``: what the run's end reports it used, in this
  format's shape: uncached input, output and cached input tokens, and (Claude Code only:
  the others price nothing) the cost in USD. Without it: Claude 0 tokens at $0, Codex and
  Gemini 10 input and 5 output tokens
- ``exit N``: end with exit status N (an error result unless N is 0)
- ``exit-once MARKER N``: like ``exit N`` if file MARKER is absent (it is created), else go on
- ``limit [SECONDS] [SHAPE]``: print this format's usage-limit output with a reset SECONDS
  ahead (default 5 hours) in one of the shapes the real CLI prints (:data:`LIMIT_SHAPES`,
  the first is the default) and exit 1; ``limit-once MARKER [SECONDS] [SHAPE]``: only if
  MARKER is absent

Unknown or malformed directives exit 2. With no ending directive the run succeeds (exit 0). Each run
appends one JSON line to ``$FAKE_AGENT_RECORD`` (if set) before obeying directives:
``{"format", "resumed", "session_id", "prompt", "model", "effort", "cwd", "argv", "pid"}``.

Conversation history: when the imitated CLI's home is given by its environment variable,
each run (however it ends, unless killed) also saves its turn, the prompt and the
assistant messages, where and as that CLI does, appending to the conversation on resume,
so the adapters' ``conversations()`` can be tested against it. Without the variable
nothing is saved: tests never write into the real home directory.

- claude, ``$CLAUDE_CONFIG_DIR``: ``projects/<realpath of cwd, each non-alphanumeric
  character as '-'>/<session id>.jsonl``, one event per line (``user``/``assistant``
  with ``sessionId``, ``cwd``, ``timestamp``, ``uuid``, ``parentUuid``, ``message``)
- codex, ``$CODEX_HOME``: ``sessions/YYYY/MM/DD/rollout-<local YYYY-MM-DDThh-mm-ss>-
  <thread id>.jsonl``, ``{"timestamp", "type", "payload"}`` lines: ``session_meta``
  (``id``, ``timestamp``, ``cwd``) and the injected ``<environment_context>`` on a new
  thread, then the user message (``response_item`` and ``event_msg``) and the replies
- gemini, ``$GEMINI_CLI_HOME`` (Gemini CLI's stand-in for the home directory):
  ``.gemini/tmp/<short id>/chats/session-<UTC YYYY-MM-DDThh-mm>-<id[:8]>.jsonl``, the
  short id (the cwd's slugified basename, ``-1``… on collision) registered in
  ``.gemini/projects.json`` and named in ``<dir>/.project_root`` markers; a metadata
  line (``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``), then
  ``user``/``gemini`` message records and ``{"$set": {"lastUpdated": …}}`` updates
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

DEFAULT_LIMIT_SECONDS = 5 * 3600
_GIT_IDENTITY = [
    *("-c", "user.name=Fake Agent"),
    *("-c", "user.email=fake@agent.invalid"),
    *("-c", "commit.gpgsign=false"),
]

# Options each CLI accepts here: name -> whether it takes a value.
_OPTIONS: dict[str, dict[str, bool]] = {
    "claude": {
        "-p": False,
        "--print": False,
        "--output-format": True,
        "--verbose": False,
        "--model": True,
        "--effort": True,
        "--resume": True,
        "-r": True,
        "--permission-mode": True,
        "--allowedTools": True,
        "--allowed-tools": True,
        "--settings": True,
        "--session-id": True,
        "--dangerously-skip-permissions": False,
        "--append-system-prompt": True,
        "--max-turns": True,
        "--max-budget-usd": True,
    },
    "codex": {
        "--json": False,
        "--model": True,
        "-m": True,
        "-c": True,
        "--config": True,
        "--skip-git-repo-check": False,
        "--sandbox": True,
        "-s": True,
        "--add-dir": True,
        "--dangerously-bypass-approvals-and-sandbox": False,
    },
    "gemini": {
        "-p": True,
        "--prompt": True,
        "--output-format": True,
        "-m": True,
        "--model": True,
        "--resume": True,
        "-r": True,
        "--yolo": False,
        "-y": False,
        "--approval-mode": True,
        "--skip-trust": False,
        "--policy": True,
        "--session-id": True,
    },
}


class UsageError(Exception):
    """A command line the real CLI would reject."""


@dataclass
class Invocation:
    """What the command line asked for."""

    format: str
    options: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    resume: str | None = None

    def option(self, *names: str) -> str | None:
        """The last value given to the first of ``names`` present."""
        return next((self.options[name][-1] for name in names if name in self.options), None)

    def read_prompt(self) -> str:
        """The prompt: an option (gemini), the positional argument, or stdin (no
        positional, or codex's ``-``)."""
        given = self.option("-p", "--prompt") if self.format == "gemini" else None
        if given is not None:
            return given
        if not self.positionals or (self.format == "codex" and self.positionals == ["-"]):
            return sys.stdin.read()
        return " ".join(self.positionals)

    @property
    def model(self) -> str | None:
        """The requested model, if any."""
        return self.option("--model", "-m")

    @property
    def effort(self) -> str | None:
        """Claude's ``--effort``, or codex's ``-c model_reasoning_effort=…``."""
        if self.format != "codex":
            return self.option("--effort")
        overrides = [*self.options.get("-c", []), *self.options.get("--config", [])]
        efforts = [
            value
            for key, _, value in (o.partition("=") for o in overrides)
            if key == "model_reasoning_effort"
        ]
        return efforts[-1] if efforts else None


def detect_format(args: list[str]) -> str:
    """Which CLI this invocation imitates."""
    forced = os.environ.get("FAKE_AGENT_FORMAT")
    if forced:
        if forced not in _OPTIONS:
            raise UsageError(f"FAKE_AGENT_FORMAT must be one of {', '.join(_OPTIONS)}")
        return forced
    if args[:1] == ["exec"]:
        return "codex"
    return "claude" if "--verbose" in args else "gemini"


def parse(args: list[str]) -> Invocation:
    """Parse argv like the imitated CLI (``--`` ends options; ``--opt=value`` works)."""
    invocation = Invocation(detect_format(args))
    if invocation.format == "codex":
        if args[:1] != ["exec"]:
            raise UsageError("fake codex only supports 'exec'")
        args = args[1:]
    known = _OPTIONS[invocation.format]
    tokens = iter(args)
    only_positionals = False
    for token in tokens:
        if only_positionals or not token.startswith("-") or token == "-":
            _positional(invocation, token, tokens, only_positionals)
        elif token == "--":
            only_positionals = True
        else:
            name, has_inline, inline = token.partition("=")
            if name not in known:
                raise UsageError(f"unknown option '{name}'")
            value = (inline if has_inline else next(tokens, None)) if known[name] else ""
            if value is None:
                raise UsageError(f"option '{name}' needs a value")
            invocation.options.setdefault(name, []).append(value)
    if invocation.format != "codex":
        invocation.resume = invocation.option("--resume", "-r")
    return invocation


def _positional(invocation: Invocation, token: str, rest: Iterator[str], literal: bool) -> None:
    """A positional argument; for codex, ``resume ID`` before any prompt is a subcommand."""
    starts_resume = invocation.format == "codex" and not literal and not invocation.positionals
    if starts_resume and token == "resume" and invocation.resume is None:
        invocation.resume = next(rest, None)
        if invocation.resume is None:
            raise UsageError("resume needs a session id")
        return
    invocation.positionals.append(token)


def check_output_format(invocation: Invocation) -> None:
    """The fake only speaks the JSON-lines formats Canopy asks for."""
    if invocation.format == "codex":
        if "--json" not in invocation.options:
            raise UsageError("fake codex needs --json")
    elif invocation.option("--output-format") != "stream-json":
        raise UsageError("fake agent needs --output-format stream-json")


# ----------------------------------------------------------------- output formats


@dataclass(frozen=True)
class Reported:
    """The usage a run's end reports (the ``usage`` directive)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    cost_usd: float = 0.0


class Emitter(ABC):
    """Prints one CLI's events; subclasses shape them like the real CLI."""

    format: str
    default_usage = Reported(10, 5)

    def __init__(self, session_id: str, model: str | None, prompt: str) -> None:
        self.session_id = session_id
        self.model = model or "fake-model"
        self.prompt = prompt
        self.said: list[str] = []
        self.reported = self.default_usage

    def emit(self, event: dict[str, Any]) -> None:
        """One JSON line, flushed so a streaming reader sees it at once."""
        print(json.dumps(event, separators=(",", ":")), flush=True)

    @abstractmethod
    def start(self) -> None:
        """The event announcing the session."""

    def say(self, text: str) -> None:
        """An assistant message, kept for the conversation history too."""
        self.said.append(text)
        self.show(text)

    @abstractmethod
    def show(self, text: str) -> None:
        """Print an assistant message event."""

    @abstractmethod
    def succeed(self, text: str) -> None:
        """The events of a successful end."""

    @abstractmethod
    def fail(self, message: str) -> None:
        """The events of a failed run."""

    @abstractmethod
    def limit(self, reset: datetime, shape: str) -> None:
        """The CLI's usage-limit output for a limit resetting at ``reset``, in ``shape``."""


class ClaudeEmitter(Emitter):
    """``claude -p --output-format stream-json --verbose``."""

    format = "claude"
    default_usage = Reported(0, 0)

    def start(self) -> None:
        self.emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": os.getcwd(),
                "session_id": self.session_id,
                "tools": ["Bash", "Edit", "Read"],
                "mcp_servers": [],
                "model": self.model,
                "permissionMode": "default",
                "apiKeySource": "none",
                "uuid": str(uuid.uuid4()),
            }
        )

    def show(self, text: str, model: str | None = None) -> None:
        content = [{"type": "text", "text": text}]
        message = {"role": "assistant", "model": model or self.model, "content": content}
        self.emit(
            {
                "type": "assistant",
                "message": {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", **message},
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def _result(
        self, text: str, *, error: bool, subtype: str, api_error_status: int | None = None
    ) -> None:
        event: dict[str, Any] = {
            "type": "result",
            "subtype": subtype,
            "is_error": error,
            "duration_ms": 12,
            "duration_api_ms": 0,
            "num_turns": 1,
            "result": text,
            "session_id": self.session_id,
            "total_cost_usd": self.reported.cost_usd,
            "usage": {
                "input_tokens": self.reported.input_tokens,
                "output_tokens": self.reported.output_tokens,
                "cache_read_input_tokens": self.reported.cached_tokens,
            },
            "uuid": str(uuid.uuid4()),
        }
        if api_error_status is not None:
            event["api_error_status"] = api_error_status
        self.emit(event)

    def succeed(self, text: str) -> None:
        self.say(text)
        self._result(text, error=False, subtype="success")

    def fail(self, message: str) -> None:
        self._result(message, error=True, subtype="error_during_execution")

    def limit(self, reset: datetime, shape: str) -> None:
        epoch = int(reset.timestamp())
        if shape == "stderr":  # no events at all: the message alone, in local time
            print(claude_limit_text(reset, None), file=sys.stderr, flush=True)
            return
        if shape == "epoch":  # releases before 2.1: the epoch after a pipe
            self._rejected(epoch)
            text = f"Claude AI usage limit reached|{epoch}"
            self.show(text, model="<synthetic>")
            self._result(text, error=True, subtype="success")
            return
        if shape in ("event", "text"):  # "text": resetsAt left out, as 2.1.220 prints it
            self._rejected(epoch if shape == "event" else None)
        text = claude_limit_text(reset, CLAUDE_LIMIT_ZONE)
        self._api_error(text, "rate_limit")
        if shape != "synthetic":  # "synthetic": the stream ends without a result
            self._result(text, error=True, subtype="success", api_error_status=429)

    def _rejected(self, resets_at: int | None) -> None:
        """A ``rate_limit_event`` rejecting the request (``resetsAt`` when given)."""
        info: dict[str, Any] = {"status": "rejected", "rateLimitType": "five_hour"}
        if resets_at is not None:
            info.update(resetsAt=resets_at, overageStatus="rejected", isUsingOverage=False)
        event = {"type": "rate_limit_event", "rate_limit_info": info}
        self.emit({**event, "uuid": str(uuid.uuid4()), "session_id": self.session_id})

    def _api_error(self, text: str, error: str) -> None:
        """The synthetic assistant message Claude Code writes for an API failure."""
        message = {
            "id": str(uuid.uuid4()),
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        self.emit(
            {
                "type": "assistant",
                "message": message,
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "error": error,
                "is_api_error_message": True,
            }
        )


CLAUDE_LIMIT_ZONE = "Europe/Berlin"


def claude_limit_text(reset: datetime, zone: str | None) -> str:
    """Claude Code's limit line: ``You've hit your session limit · resets 2:10pm (Zone)``.

    The kind and the reset's form follow how far off it is, as in the real CLI: a session
    window names a time of day, a weekly one a weekday, a per-model one a date. Minutes
    are cut (never rounded up), as the CLI shows them.
    """
    local = reset.astimezone(ZoneInfo(zone)) if zone else reset.astimezone()
    ahead = reset - datetime.now(UTC)
    hour = f"{local.hour % 12 or 12}"
    meridiem = "am" if local.hour < 12 else "pm"
    short = f"{hour}{meridiem}" if local.minute == 0 else f"{hour}:{local:%M}{meridiem}"
    if ahead < timedelta(hours=20):
        kind, when = "session", short
    elif ahead < timedelta(days=6):
        kind, when = "weekly", f"{local:%a} {hour}:{local:%M}{meridiem}"
    else:
        kind, when = "Opus", f"{local:%b} {local.day}, {short}"
    suffix = f" ({zone})" if zone else ""
    return f"You've hit your {kind} limit · resets {when}{suffix}"


class CodexEmitter(Emitter):
    """``codex exec --json``."""

    format = "codex"

    def start(self) -> None:
        self.emit({"type": "thread.started", "thread_id": self.session_id})
        self.emit({"type": "turn.started"})

    def show(self, text: str) -> None:
        item = {"id": f"item_{uuid.uuid4().hex[:6]}", "type": "agent_message", "text": text}
        self.emit({"type": "item.completed", "item": item})

    def succeed(self, text: str) -> None:
        self.say(text)
        reported = self.reported  # Codex counts cached input inside input_tokens
        usage = {
            "input_tokens": reported.input_tokens + reported.cached_tokens,
            "cached_input_tokens": reported.cached_tokens,
            "output_tokens": reported.output_tokens,
        }
        self.emit({"type": "turn.completed", "usage": usage})

    def fail(self, message: str) -> None:
        self.emit({"type": "error", "message": message})
        self.emit({"type": "turn.failed", "error": {"message": message}})

    def limit(self, reset: datetime, shape: str) -> None:
        if shape == "quota":  # a hard quota: no reset at all
            self.fail("Quota exceeded. Check your plan and billing details.")
        elif shape == "in":  # older releases: a duration, with a curly apostrophe
            left = max(0, int((reset - datetime.now(UTC)).total_seconds()))
            self.fail(f"You\u2019ve hit your usage limit. Try again in {codex_duration(left)}.")
        else:
            self.fail(
                "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
                "visit https://chatgpt.com/codex/settings/usage to purchase more credits or try "
                f"again at {codex_time(reset)}."
            )


def codex_duration(seconds: int) -> str:
    """Codex's older rendering of a wait: ``1 day 2 hours 5 minutes`` (cut to minutes)."""
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute")]
    shown = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n]
    return " ".join(shown) or "less than a minute"


def codex_time(reset: datetime) -> str:
    """Codex's rendering of a reset: local ``3:05 PM``, or ``Sep 18th, 2025 3:05 PM``."""
    local = reset.astimezone()
    clock = f"{local.hour % 12 or 12}:{local.minute:02d} {'AM' if local.hour < 12 else 'PM'}"
    if local.date() == datetime.now().astimezone().date():
        return clock
    day = local.day
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{local:%b} {day}{suffix}, {local.year} {clock}"


class GeminiEmitter(Emitter):
    """``gemini --output-format stream-json``."""

    format = "gemini"

    def _now(self) -> str:
        return datetime.now(UTC).isoformat().replace("+00:00", "Z")

    def start(self) -> None:
        self.emit(
            {
                "type": "init",
                "timestamp": self._now(),
                "session_id": self.session_id,
                "model": self.model,
            }
        )
        user = {"type": "message", "timestamp": self._now(), "role": "user"}
        self.emit({**user, "content": self.prompt})

    def show(self, text: str) -> None:
        self.emit(
            {
                "type": "message",
                "timestamp": self._now(),
                "role": "assistant",
                "content": text,
                "delta": True,
            }
        )

    def _result(self, status: str, error: dict[str, str] | None = None) -> None:
        reported = self.reported
        prompt = reported.input_tokens + reported.cached_tokens
        stats = {
            "total_tokens": prompt + reported.output_tokens,
            "input_tokens": prompt,
            "input": reported.input_tokens,
            "cached": reported.cached_tokens,
            "output_tokens": reported.output_tokens,
            "duration_ms": 12,
        }
        event: dict[str, Any] = {"type": "result", "timestamp": self._now(), "status": status}
        if error is not None:
            event["error"] = error
        self.emit({**event, "stats": stats})

    def succeed(self, text: str) -> None:
        self.say(text)
        self._result("success")

    def fail(self, message: str) -> None:
        self._result("error", {"type": "FatalError", "message": message})

    def limit(self, reset: datetime, shape: str) -> None:
        if shape == "resource_exhausted":  # the API's own 429 on stderr: no reset
            print(GEMINI_429, file=sys.stderr, flush=True)
            return
        left = max(0, int((reset - datetime.now(UTC)).total_seconds()))
        wait = gemini_duration(left)
        message = (
            f"You have exhausted your capacity on this model. Your quota will reset after {wait}."
        )
        self._result("error", {"type": "TerminalQuotaError", "message": message})


GEMINI_429 = (
    '\u2715 [API Error: {"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 429,'
    '\\n    \\"message\\": \\"Resource has been exhausted (e.g. check quota).\\",\\n    '
    '\\"status\\": \\"RESOURCE_EXHAUSTED\\"\\n  }\\n}\\n","code":429,'
    '"status":"Too Many Requests"}}]\n  Please wait and try again later.'
)


def gemini_duration(seconds: int) -> str:
    """Gemini's rendering of a wait: ``4h28m20s``, ``3m5s``, ``53s``."""
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    if hours:
        return f"{hours}h{minutes}m{seconds % 60}s"
    return f"{minutes}m{seconds % 60}s" if minutes else f"{seconds}s"


LIMIT_SHAPES: dict[str, tuple[str, ...]] = {
    "claude": ("text", "event", "synthetic", "stderr", "epoch"),
    "codex": ("at", "in", "quota"),
    "gemini": ("terminal", "resource_exhausted"),
}
"""The usage-limit shapes each CLI prints, the default first:

- claude ``text``: a rejected ``rate_limit_event`` without ``resetsAt``, a synthetic
  assistant message (``"error": "rate_limit"``) and an error result, both saying "You've
  hit your session limit · resets 2:10pm (Europe/Berlin)" (weekly: ``Mon 12:00am``, per
  model: ``Aug 17, 5am``, by how far off the reset is); ``event``: the same with
  ``resetsAt``; ``synthetic``: only the synthetic message, no result; ``stderr``: only
  the line on stderr, in local time; ``epoch``: "Claude AI usage limit reached|<epoch>"
- codex ``at``: "… try again at 3:05 PM." (another day: ``Sep 18th, 2025 3:05 PM``);
  ``in``: "You've hit your usage limit. Try again in 4 hours 59 minutes." (with a curly
  apostrophe); ``quota``:
  "Quota exceeded. Check your plan and billing details." (no reset)
- gemini ``terminal``: a ``TerminalQuotaError`` result, "… reset after 4h59m0s";
  ``resource_exhausted``: the API's 429 ``RESOURCE_EXHAUSTED`` error on stderr (no reset)
"""

LIMIT_SHAPES_ALL = {shape for shapes in LIMIT_SHAPES.values() for shape in shapes}

EMITTERS: dict[str, type[Emitter]] = {
    "claude": ClaudeEmitter,
    "codex": CodexEmitter,
    "gemini": GeminiEmitter,
}

# -------------------------------------------------------------------- directives


class Stop(Exception):
    """End the run with this exit status (its events are already printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def directives(prompt: str) -> list[tuple[str, str]]:
    """(verb, arguments) pairs: ``$FAKE_AGENT_DIRECTIVES`` first, then the prompt's."""
    found: list[tuple[str, str]] = []
    for line in os.environ.get("FAKE_AGENT_DIRECTIVES", "").splitlines():
        text = line.strip().removeprefix("FAKE:").strip()
        if text:
            found.append(_split(text))
    for line in prompt.splitlines():
        text = line.strip()
        if text.startswith("FAKE:"):
            found.append(_split(text.removeprefix("FAKE:").strip()))
    return found


def _split(text: str) -> tuple[str, str]:
    verb, _, rest = text.partition(" ")
    return verb, rest.strip()


def obey(verb: str, args: str, emitter: Emitter) -> None:
    """Carry out one directive; raise :class:`Stop` to end the run."""
    handler = HANDLERS.get(verb)
    if handler is None:
        print(f"fake agent: unknown directive {verb!r}", file=sys.stderr)
        raise Stop(2)
    try:
        handler(args, emitter)
    except ValueError as error:
        print(f"fake agent: bad directive {verb} {args!r}: {error}", file=sys.stderr)
        raise Stop(2) from error


def _write(args: str, emitter: Emitter, mode: str = "w") -> None:
    path_text, _, text = args.partition(" ")
    path = Path(path_text)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as handle:
        handle.write(text + "\n")


def _append(args: str, emitter: Emitter) -> None:
    _write(args, emitter, mode="a")


def _commit(args: str, emitter: Emitter) -> None:
    for command in (["add", "-A"], [*_GIT_IDENTITY, "commit", "-q", "--allow-empty", "-m", args]):
        done = subprocess.run(["git", *command], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            emitter.fail(f"git {command[-1]} failed: {done.stderr.strip()}")
            raise Stop(1)


def _say(args: str, emitter: Emitter) -> None:
    emitter.say(args)


def _stderr(args: str, emitter: Emitter) -> None:
    print(args, file=sys.stderr, flush=True)


def _sleep(args: str, emitter: Emitter) -> None:
    time.sleep(float(args))


def _hang(args: str, emitter: Emitter) -> None:
    while True:
        time.sleep(3600)


def _wait_for(args: str, emitter: Emitter) -> None:
    while not Path(args).exists():
        time.sleep(0.05)


def _replay(args: str, emitter: Emitter) -> None:
    sys.stdout.write(Path(args).read_text(encoding="utf-8"))
    sys.stdout.flush()


def _usage(args: str, emitter: Emitter) -> None:
    words = args.split()
    if not 2 <= len(words) <= 4:
        raise ValueError("expected INPUT OUTPUT [CACHED] [COST]")
    cached = int(words[2]) if len(words) > 2 else 0
    cost = float(words[3]) if len(words) > 3 else 0.0
    emitter.reported = Reported(int(words[0]), int(words[1]), cached, cost)


def _exit(args: str, emitter: Emitter) -> None:
    code = int(args)
    if code == 0:
        emitter.succeed("fake agent exiting with 0")
    else:
        emitter.fail(f"fake agent exiting with {code}")
    raise Stop(code)


def _limit(args: str, emitter: Emitter) -> None:
    """``[SECONDS] [SHAPE]``: either may be left out."""
    words = args.split()
    seconds = float(words.pop(0)) if words and words[0] not in LIMIT_SHAPES_ALL else None
    shapes = LIMIT_SHAPES[emitter.format]
    shape = words.pop(0) if words else shapes[0]
    if words or shape not in shapes:
        raise ValueError(f"expected [SECONDS] [SHAPE], SHAPE one of {', '.join(shapes)}")
    delay = DEFAULT_LIMIT_SECONDS if seconds is None else seconds
    emitter.limit(datetime.fromtimestamp(time.time() + delay, UTC), shape)
    raise Stop(1)


Handler = Callable[[str, Emitter], None]


def _once(handler: Handler) -> Handler:
    """``<verb>-once MARKER ARGS``: run ``handler(ARGS)`` only while MARKER is absent."""

    def run(args: str, emitter: Emitter) -> None:
        marker_text, _, rest = args.partition(" ")
        marker = Path(marker_text)
        if marker.exists():
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        handler(rest.strip(), emitter)

    return run


HANDLERS: dict[str, Handler] = {
    "write": _write,
    "append": _append,
    "commit": _commit,
    "say": _say,
    "stderr": _stderr,
    "sleep": _sleep,
    "hang": _hang,
    "wait-for": _wait_for,
    "replay": _replay,
    "usage": _usage,
    "exit": _exit,
    "exit-once": _once(_exit),
    "limit": _limit,
    "limit-once": _once(_limit),
}

# ---------------------------------------------------------------- conversation files


@dataclass
class Turn:
    """One run as the imitated CLI saves it in its conversation history."""

    session_id: str
    resumed: bool
    prompt: str
    replies: list[str]
    model: str
    cwd: str


def iso_now() -> str:
    """Now in UTC as the CLIs write it: ``2026-01-15T17:00:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_records(path: Path, records: list[dict[str, Any]]) -> None:
    """Append JSON lines to ``path`` (created with its directories), in one write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        lines = [json.dumps(record, separators=(",", ":")) + "\n" for record in records]
        handle.write("".join(lines))


def save_claude(turn: Turn) -> None:
    """Claude Code: one event per message, chained by ``parentUuid``."""
    home = os.environ.get("CLAUDE_CONFIG_DIR")
    if not home:
        return
    folder = Path(home) / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", turn.cwd)
    path = folder / f"{turn.session_id}.jsonl"
    prompt = {"type": "user", "message": {"role": "user", "content": turn.prompt}}
    messages: list[dict[str, Any]] = [prompt]
    for text in turn.replies:
        content = [{"type": "text", "text": text}]
        message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant"}
        messages.append({"type": "assistant", "message": {**message, "content": content}})
    parent, records = last_uuid(path), []
    for message in messages:
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": turn.cwd,
            "sessionId": turn.session_id,
            "version": "2.0.0",
            "gitBranch": "",
            **message,
            "uuid": str(uuid.uuid4()),
            "timestamp": iso_now(),
        }
        parent = record["uuid"]
        records.append(record)
    append_records(path, records)


def last_uuid(path: Path) -> str | None:
    """The ``uuid`` of the transcript's last event, which a resumed turn continues."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found = (json.loads(line).get("uuid") for line in reversed(lines) if line.strip())
    return next((value for value in found if isinstance(value, str)), None)


def save_codex(turn: Turn) -> None:
    """Codex: a rollout per thread, found again by its id when the thread is resumed."""
    home = os.environ.get("CODEX_HOME")
    if not home:
        return
    sessions = Path(home) / "sessions"
    existing = sorted(sessions.glob(f"*/*/*/rollout-*-{turn.session_id}.jsonl"))
    started = datetime.now().astimezone()
    name = f"rollout-{started:%Y-%m-%dT%H-%M-%S}-{turn.session_id}.jsonl"
    path = existing[0] if existing else sessions / f"{started:%Y/%m/%d}" / name
    items: list[tuple[str, dict[str, Any]]] = []
    if not existing:
        items += codex_thread_start(turn)
    prompt = [{"type": "input_text", "text": turn.prompt}]
    items.append(("response_item", {"type": "message", "role": "user", "content": prompt}))
    items.append(("event_msg", {"type": "user_message", "message": turn.prompt, "images": []}))
    for text in turn.replies:
        reply = [{"type": "output_text", "text": text}]
        items.append(("event_msg", {"type": "agent_message", "message": text}))
        items.append(("response_item", {"type": "message", "role": "assistant", "content": reply}))
    records = [{"timestamp": iso_now(), "type": kind, "payload": body} for kind, body in items]
    append_records(path, records)


def codex_thread_start(turn: Turn) -> list[tuple[str, dict[str, Any]]]:
    """What Codex writes first on a new thread: its metadata and the injected context."""
    meta = {
        "id": turn.session_id,
        "timestamp": iso_now(),
        "cwd": turn.cwd,
        "originator": "codex_exec",
        "cli_version": "0.50.0",
        "instructions": None,
        "source": "exec",
        "model_provider": "openai",
    }
    context = f"<environment_context>\n  <cwd>{turn.cwd}</cwd>\n</environment_context>"
    injected = [{"type": "input_text", "text": context}]
    return [
        ("session_meta", meta),
        ("response_item", {"type": "message", "role": "user", "content": injected}),
    ]


def save_gemini(turn: Turn) -> None:
    """Gemini CLI: a JSON-lines chat file in the project's short-id directory."""
    home = os.environ.get("GEMINI_CLI_HOME")
    if not home:
        return
    gemini = Path(home) / ".gemini"
    chats = gemini / "tmp" / gemini_project(gemini, turn.cwd) / "chats"
    short = turn.session_id[:8]
    existing = sorted(chats.glob(f"session-*-{short}.jsonl"))
    name = f"session-{datetime.now(UTC):%Y-%m-%dT%H-%M}-{short}.jsonl"
    path = existing[0] if existing else chats / name
    records: list[dict[str, Any]] = []
    if not existing:
        project_hash = hashlib.sha256(turn.cwd.encode()).hexdigest()
        now = iso_now()
        meta = {"sessionId": turn.session_id, "projectHash": project_hash}
        records.append({**meta, "startTime": now, "lastUpdated": now})
    records += gemini_message("user", [{"text": turn.prompt}])
    for text in turn.replies:
        records += gemini_message("gemini", text, model=turn.model, thoughts=[], tokens=None)
    append_records(path, records)


def gemini_message(kind: str, content: object, **extra: object) -> list[dict[str, Any]]:
    """A message record and the ``lastUpdated`` update Gemini CLI appends after it."""
    now = iso_now()
    message = {"id": str(uuid.uuid4()), "timestamp": now, "type": kind, "content": content}
    return [{**message, **extra}, {"$set": {"lastUpdated": now}}]


def gemini_project(gemini: Path, root: str) -> str:
    """Gemini CLI's short id for a project root, registered and marked as the CLI does."""
    registry = gemini / "projects.json"
    try:
        projects: dict[str, str] = json.loads(registry.read_text(encoding="utf-8"))["projects"]
    except (OSError, ValueError, KeyError, TypeError):
        projects = {}
    slug = projects.get(root)
    if slug is None:
        base = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", Path(root).name.lower())).strip("-")
        base = base or "project"
        taken = set(projects.values())
        numbered = (f"{base}-{n}" for n in itertools.count(1))
        slug = next(name for name in itertools.chain([base], numbered) if name not in taken)
        projects[root] = slug
        registry.parent.mkdir(parents=True, exist_ok=True)
        registry.write_text(json.dumps({"projects": projects}, indent=2), encoding="utf-8")
    for base_dir in ("tmp", "history"):
        marker = gemini / base_dir / slug / ".project_root"
        marker.parent.mkdir(parents=True, exist_ok=True)
        if not marker.exists():
            marker.write_text(root, encoding="utf-8")
    return slug


SAVERS: dict[str, Callable[[Turn], None]] = {
    "claude": save_claude,
    "codex": save_codex,
    "gemini": save_gemini,
}

# -------------------------------------------------------------------------- main


def record(invocation: Invocation, session_id: str, prompt: str, argv: list[str]) -> None:
    """Append this run to ``$FAKE_AGENT_RECORD`` (one JSON line, one write)."""
    path = os.environ.get("FAKE_AGENT_RECORD")
    if not path:
        return
    entry = {
        "format": invocation.format,
        "resumed": invocation.resume,
        "session_id": session_id,
        "prompt": prompt,
        "model": invocation.model,
        "effort": invocation.effort,
        "cwd": os.getcwd(),
        "argv": argv,
        "pid": os.getpid(),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def main(argv: list[str]) -> int:
    """Imitate one headless run of the CLI that ``argv`` addresses."""
    try:
        invocation = parse(argv)
        check_output_format(invocation)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    prompt = invocation.read_prompt()
    session_id = invocation.resume or invocation.option("--session-id") or str(uuid.uuid4())
    record(invocation, session_id, prompt, argv)
    emitter = EMITTERS[invocation.format](session_id, invocation.model, prompt)
    emitter.start()
    try:
        return converse(prompt, emitter)
    finally:
        turn = Turn(
            session_id=session_id,
            resumed=invocation.resume is not None,
            prompt=prompt,
            replies=emitter.said,
            model=emitter.model,
            cwd=os.path.realpath(os.getcwd()),
        )
        SAVERS[invocation.format](turn)


def converse(prompt: str, emitter: Emitter) -> int:
    """Obey the directives, then succeed unless one ended the run; the exit status."""
    try:
        for verb, args in directives(prompt):
            obey(verb, args, emitter)
    except Stop as stop:
        return stop.code
    emitter.succeed("fake agent done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
