"""Claude Code (``claude``) in print mode with ``stream-json`` output.

argv: ``claude -p --output-format stream-json --verbose [PERMISSION FLAGS] [--model M]
[--effort E] [--resume ID | --session-id UUID] [--max-budget-usd USD]`` (the last when the
graph's budget is in USD: what it leaves the node), the prompt on stdin (print mode reads it
there when no prompt argument is given), so neither its size nor a leading ``-`` (a
markdown list) can break the launch. Effort uses Claude Code's ``--effort`` flag
(:data:`EFFORTS`). A fresh run takes the session id Canopy chose (``--session-id``); the
CLI refuses an id a conversation already has ("Session ID … is already in use"), so a
relaunch of a started run resumes it instead.

Permissions (:mod:`canopy.permissions`), the same as root and as any other user except
``full``; checked against the real CLI (2.1.332) in ``tests/test_real_claude.py``:

- ``workspace``: ``--permission-mode acceptEdits --allowedTools Bash --settings
  {"sandbox":{"enabled":true,"allowUnsandboxedCommands":false}}``. The file tools edit
  only inside the workdir (not its ``.git``, ``.claude`` and other protected paths), any
  command runs, and where the sandbox can start (Linux: ``bwrap`` and ``socat``
  installed) commands may write only in the workdir (and a temp dir of their own) and
  reach no network; where it cannot, Claude Code says so on stderr and runs them
  unsandboxed.
- ``read-only``: ``--permission-mode dontAsk``: whatever would ask is refused, so nothing
  is written or run but reads and the commands Claude Code itself deems read-only
  (``ls``, ``git status``). Allow rules in the user's or the repository's settings
  still apply.
- ``full``: ``--permission-mode bypassPermissions``. Claude Code refuses it to root unless
  ``IS_SANDBOX=1`` (its own switch, inherited from Canopy's environment) declares the
  machine a sandbox; without it the launch is refused here, in one line saying so.
- ``cli``: no flags; the CLI's own settings decide.

Session id: the ``session_id`` of the ``system``/``init`` event (and of the final
``result`` event). Denials: the ``permission_denials`` of the ``result`` event and the
``system``/``permission_denied`` events, one line per refused tool call. Retries: the CLI
retries a failed API call itself (up to 10 times, about 3 minutes) and announces each with
a ``system``/``api_retry`` event. Usage limit: a ``rate_limit_event`` whose
``rate_limit_info.status`` is ``rejected`` (``resetsAt`` epoch, when given) or a synthetic
assistant message whose ``error`` is ``rate_limit``; worded (and timed, without
``resetsAt``) by that message, an error result or a plain-text line: ``You've hit your
session limit · resets 9am (Europe/Berlin)``, ``… weekly limit · resets Mon 12:00am``, ``…
Opus limit · resets Aug 17, 5am``, ``Claude AI usage limit reached|<epoch>`` and the like
(docs/platforms.md). On an API key a 429 is a per-minute rate limit with no reset: ``API
Error: Request rejected (429) · This request would exceed your account's rate limit.
Please try again later.`` in a synthetic ``rate_limit`` message without a
``rate_limit_event``, read as a limit of kind ``rate``.

Doctor checks (:meth:`ClaudePlatform.cli_checks`, no model call): ``claude --version``;
``claude auth status --json``, whose ``loggedIn`` reads the local credentials (exit 1
when signed out); and the launch argv with nothing on stdin, which ends "Input must be
provided either through stdin or as a prompt argument when using --print" once its
options are accepted (signed out too: only a model call says "Not logged in").

Reply: the ``result`` text of a successful run, else the last assistant message's text;
the messages Claude Code writes itself (model ``<synthetic>``: "Not logged in", API
errors, limits) are never a reply.

Conversations: ``$CLAUDE_CONFIG_DIR`` (default ``~/.claude``) ``/projects/<dir>/<session
uuid>.jsonl``, where ``<dir>`` is the realpath of the cwd (NFC) with every character but
``[A-Za-z0-9]`` replaced by ``-``; a name over 200 characters is cut to 200 and given a
hash suffix that differs between Claude Code builds, so such names are matched by prefix.
Each line is an event carrying ``sessionId``, ``cwd``, ``timestamp``, ``type`` and
``message``. Distinct cwds can share a ``<dir>`` (``/a-b`` and ``/a/b``), so each file's
own ``cwd`` decides. Sidechain (subagent) transcripts and other files are not listed.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from canopy.errors import Refused
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
from canopy.platforms.claude_view import call_target, content_blocks, render_event
from canopy.platforms.history import (
    harness_home,
    is_workdir,
    iter_jsonl,
    list_dir,
    modified_at,
    newest_first,
    parse_timestamp,
    resolved,
    texts,
    title_of,
)
from canopy.platforms.resets import MONTH_PATTERN, WEEKDAY_PATTERN, clock_reset, from_epoch
from canopy.platforms.usage import HarnessUsage, amount, count, events_of, main_model, total
from canopy.platforms.view import LogContext, one_line

# "limit reached" alone also names the context window ("Context limit reached · /compact"),
# so it only counts next to a reset or as a usage limit; "hit your … limit" names any kind
# (usage, session, weekly, Opus, Sonnet) but the context window.
_LIMIT_TEXT = re.compile(
    r"usage limit reached|limit reached\W+resets?\b|out of extra usage|your limit will reset"
    r"|hit your (?!context\b)(?:[\w.-]+ ){0,3}?limit\b",
    re.IGNORECASE,
)
_EPOCH = re.compile(r"limit reached\|(?P<epoch>\d{9,12})", re.IGNORECASE)
# "resets 9am", "resets 2:10pm", "resets Aug 17, 5am", "resets Sep 6 at 1pm",
# "resets Mon 12:00am", "reset at 10am", each optionally followed by "(Zone/Name)".
_RESETS = re.compile(
    r"\bresets?\s+(?:at\s+)?"
    rf"(?:(?P<month>{MONTH_PATTERN})[a-z]*\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?:at\s+)?"
    rf"|(?P<weekday>{WEEKDAY_PATTERN})[a-z]*\.?,?\s+(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<meridiem>[ap])\.?m\b\.?"
    r"(?:\s*\((?P<tz>[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)*)\))?",
    re.IGNORECASE,
)
EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""The values ``claude --effort`` takes (2.1.332, any case). The CLI warns about any other
on stderr and runs at its default effort, so a typo would go unnoticed in a node's log."""
TESTED_VERSIONS = ("2.1.332",)
"""The Claude Code releases Canopy's tests ran (``package.json`` pins the same)."""
_NO_PROMPT = re.compile(r"Input must be provided either through stdin or as a prompt argument")
_SANDBOX_DISABLED = re.compile(r"Sandbox disabled")
_NO_SANDBOX = (
    "workspace commands run without a sandbox (Claude Code needs bubblewrap and socat on "
    "Linux); fix: install them (Debian: apt install bubblewrap socat)"
)
"""What ``claude -p`` says once it has accepted its options and finds no prompt."""
_SANDBOX = '{"sandbox":{"enabled":true,"allowUnsandboxedCommands":false}}'
"""``--settings`` for ``workspace``: commands run in Claude Code's sandbox where it can
start one, and a command failing there is never retried outside it."""
_PERMISSION_FLAGS: dict[Permissions, tuple[str, ...]] = {
    "workspace": (
        *("--permission-mode", "acceptEdits"),
        *("--allowedTools", "Bash"),
        *("--settings", _SANDBOX),
    ),
    "read-only": ("--permission-mode", "dontAsk"),
    "full": ("--permission-mode", "bypassPermissions"),
    "cli": (),
}
"""Each level's flags (the module docstring says what each allows)."""
_SYNTHETIC = "<synthetic>"
"""The ``model`` of assistant messages Claude Code writes itself (errors, limits)."""
_LIMIT_ERROR = "rate_limit"
"""The ``error`` of the synthetic assistant message Claude Code writes for a usage limit."""
_UNSAFE_IN_DIR_NAME = re.compile(r"[^a-zA-Z0-9]")
_MAX_DIR_NAME = 200
# User turns Claude Code injects or that are not a prompt: slash-command echoes, hook and
# IDE context, interruption notes. A title is never made from them.
_NOT_A_PROMPT = re.compile(
    r"\s*(?:<(?:command-name|command-message|command-args|local-command-stdout"
    r"|local-command-stderr|session-start-hook|system-reminder|tick|goal|ide_opened_file"
    r"|ide_selection)>|\[Request interrupted by user)"
)


def _bypass_refused() -> bool:
    """Claude Code's own rule: no ``bypassPermissions`` as root unless ``IS_SANDBOX=1``
    (the CLI inherits Canopy's environment)."""
    return os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1"


@dataclass(frozen=True)
class ClaudePlatform(JsonLinesPlatform):
    """Claude Code; also the demo platform, whose agent speaks the same stream-json."""

    efforts: ClassVar[tuple[str, ...] | None] = EFFORTS

    name: str = "claude"
    executable: tuple[str, ...] = ("claude",)
    extra_args: tuple[str, ...] = ()
    bypass_refused: bool = field(default_factory=_bypass_refused)
    """Whether the CLI would refuse ``bypassPermissions`` (``full``): it does as root, unless
    ``IS_SANDBOX=1`` declares the machine a sandbox. A field so tests can set it."""
    takes_session_id = True

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
        """``claude -p --output-format stream-json --verbose [options]``, prompt on stdin; a
        fresh run takes ``--session-id`` (the CLI refuses it next to ``--resume``)."""
        if permissions == "full" and self.bypass_refused:
            raise Refused(
                "permissions 'full' cannot run Claude Code as root: it refuses"
                " bypassPermissions to root unless IS_SANDBOX=1 in Canopy's environment"
                " declares this machine a disposable sandbox"
            )
        chosen = None if resume_session_id else session_id
        argv = [
            *self.executable,
            *self.extra_args,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            *_PERMISSION_FLAGS[permissions],
            *option("--model", model),
            *option("--effort", effort),
            *option("--resume", resume_session_id),
            *option("--session-id", chosen),
        ]
        return Invocation(argv, stdin=prompt)

    def budget_flags(self, usd: float) -> list[str]:
        """``--max-budget-usd AMOUNT``: Claude Code ends the run with an error result
        (``error_max_budget_usd``) once it has spent that much. The CLI refuses 0, so the
        amount is at least a millionth of a dollar."""
        return ["--max-budget-usd", f"{max(usd, 0.000001):.6f}".rstrip("0").rstrip(".")]

    def session_id_from_line(self, line: str) -> str | None:
        """``session_id`` of the ``system`` (init) and ``result`` events."""
        event = json_event(line)
        if event is None or event.get("type") not in ("system", "result"):
            return None
        return str_field(event, "session_id")

    def denials(self, output: str) -> list[str]:
        """Each refused tool call once, in order: ``Write app/x.py``, ``Bash: rm -rf …``.

        The ``result`` event lists them (``permission_denials``) and each was announced by
        a ``permission_denied`` event as it happened, which is all there is when the run
        ends without a result; the tool's input comes from the assistant's tool call.
        """
        events = json_events(output)
        init = next(iter(events_of(events, "system")), {})
        calls = {
            str(block.get("id")): block
            for event in events_of(events, "assistant")
            for block in content_blocks(event)
            if block.get("type") == "tool_use"
        }
        denied: dict[str, tuple[object, object]] = {}
        for event in events:
            for call in _denied_calls(event):
                key = str_field(call, "tool_use_id") or f"#{len(denied)}"
                asked = calls.get(key, {})
                name = str_field(call, "tool_name") or asked.get("name")
                arguments = call.get("tool_input") or asked.get("input")
                if key not in denied or denied[key][1] is None:
                    denied[key] = (name, arguments)
        cwd = str_field(init, "cwd")
        return [_denial_line(name, arguments, cwd) for name, arguments in denied.values()]

    def retry_notice(self, line: str) -> RetryNotice | None:
        """A ``system``/``api_retry`` event: a failed API call (429, 5xx, 529 overloaded, no
        connection) that Claude Code tries again after ``retry_delay_ms``."""
        event = json_event(line)
        if event is None or event.get("type") != "system" or event.get("subtype") != "api_retry":
            return None
        delay = event.get("retry_delay_ms")
        wait = timedelta(milliseconds=delay) if isinstance(delay, int | float) else None
        status = event.get("error_status")
        error = str_field(event, "error") or "error"
        what = f"{error} (HTTP {status})" if isinstance(status, int) else error
        attempt = f"{event.get('attempt', '?')}/{event.get('max_retries', '?')}"
        after = f" in {wait.total_seconds():.0f}s" if wait is not None else ""
        return RetryNotice(f"Claude API call failed: {what}; retry {attempt}{after}", wait)

    def cli_checks(self) -> CliChecks | None:
        """``claude --version``, ``claude auth status --json`` (``loggedIn``: local, no
        model call) and the launch argv with no prompt, which the CLI checks in full
        (options, ``--settings``, the root rule) before it says the prompt is missing.
        Signed out, it says the same: only a run would answer "Not logged in"."""
        return CliChecks(
            version=[*self.executable, "--version"],
            accepted=_NO_PROMPT,
            auth=[*self.executable, "auth", "status", "--json"],
            signed_in=_logged_in,
            tested=TESTED_VERSIONS,
            warnings=((_SANDBOX_DISABLED, _NO_SANDBOX),),
        )

    def succeeded(self, event: dict[str, Any]) -> bool:
        """A ``result`` event that is not an error."""
        return event.get("type") == "result" and event.get("is_error") is False

    def error_text(self, event: dict[str, Any]) -> str | None:
        """The text of an error ``result``, or of a synthetic assistant message carrying an
        ``error`` (how Claude Code reports an API failure, a limit among them, when the
        stream ends without a result). The agent's own assistant text is never read."""
        if event.get("type") == "result" and event.get("is_error") is True:
            return str_field(event, "result")
        if _api_error(event) is not None:
            return _assistant_text(event)
        return None

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """``… usage limit reached|<epoch>`` or ``You've hit your … limit · resets …``."""
        if not _LIMIT_TEXT.search(text):
            return None
        epoch = _EPOCH.search(text)
        if epoch is not None:
            return UsageLimit(from_epoch(int(epoch["epoch"])), first_line(text))
        clock = _RESETS.search(text)
        reset = clock_reset(now, clock) if clock is not None else None
        return UsageLimit(reset, first_line(text))

    def limit_in_events(self, events: list[dict[str, Any]]) -> UsageLimit | None:
        """A ``rate_limit_event`` with status ``rejected`` (``allowed*`` are only notices),
        or a synthetic assistant message whose ``error`` is ``rate_limit``: a plan's usage
        limit when it words one, else an API key's rate limit (kind ``rate``), which
        names no reset and comes without a ``rate_limit_event``."""
        for event in events:
            info = event.get("rate_limit_info") if event.get("type") == "rate_limit_event" else None
            if isinstance(info, dict) and info.get("status") == "rejected":
                return _rejection(info)
        limited = [event for event in events if _api_error(event) == _LIMIT_ERROR]
        if not limited:
            return None
        text = _assistant_text(limited[-1]) or ""
        if _LIMIT_TEXT.search(text) or limited[-1].get("api_error") == "usage_limit_reached":
            return UsageLimit(None, "Claude usage limit reached (rate_limit error message)")
        return UsageLimit(None, first_line(text) or "Claude API rate limit (429)", kind="rate")

    def reply_text(self, output: str) -> str | None:
        """A successful ``result``'s text; else (error, no result) the last assistant text.

        Claude Code's own messages (model ``<synthetic>``: "Not logged in · Please run
        /login", API errors, limits) are its failure report, never the agent's reply; an
        error result repeats them, so it is not read either.
        """
        events = json_events(output)
        result = next((e for e in reversed(events) if e.get("type") == "result"), None)
        if result is not None and result.get("is_error") is False:
            text = nonblank(str_field(result, "result"))
            if text is not None:
                return text
        replies = (_assistant_text(event) for event in reversed(events) if not _synthetic(event))
        return next(filter(None, replies), None)

    def usage_in_events(self, events: list[dict[str, Any]]) -> HarnessUsage:
        """The final ``result``'s ``usage``, ``total_cost_usd``, ``num_turns`` and
        ``duration_ms``; without a result (a crash, a limit), the assistant messages'
        usage summed. The model: the one ``modelUsage`` credits with most output, else the
        last real (not ``<synthetic>``) assistant message's, else the init event's."""
        messages = [event.get("message") for event in events_of(events, "assistant")]
        real = [m for m in messages if isinstance(m, dict) and m.get("model") != _SYNTHETIC]
        models = [str_field(message, "model") for message in real]
        init = next(iter(events_of(events, "system")), {})
        fallback = next(filter(None, reversed(models)), None) or str_field(init, "model")
        results = events_of(events, "result")
        if not results:
            once = {
                str(message.get("id", n)): message.get("usage") for n, message in enumerate(real)
            }
            return replace(_token_usage(list(once.values())), model=fallback)
        result = results[-1]
        return replace(
            _token_usage([result.get("usage")]),
            cost_usd=amount(result, "total_cost_usd"),
            turns=count(result, "num_turns"),
            duration_ms=count(result, "duration_ms"),
            model=main_model(result.get("modelUsage"), "outputTokens") or fallback,
        )

    def render_event(self, event: dict[str, Any], seen: LogContext) -> list[str]:
        """Text, tool calls and failed tool calls (:mod:`canopy.platforms.claude_view`)."""
        return render_event(event, seen)

    def conversations(self, workdir: Path) -> list[HarnessConversation]:
        """Sessions under ``projects/<dir>`` whose recorded ``cwd`` is ``workdir``."""
        home = harness_home("CLAUDE_CONFIG_DIR", ".claude")
        if home is None:
            return []
        target = resolved(workdir)
        files = (f for folder in _project_dirs(home / "projects", target) for f in list_dir(folder))
        found = (_session(path) for path in files if _is_session_file(path))
        return newest_first(c for c in found if c is not None and is_workdir(c.workdir, target))


def _token_usage(usages: list[object]) -> HarnessUsage:
    """Anthropic ``usage`` objects summed (one per message; a message streamed in several
    events repeats its id and usage, so callers pass each message once)."""
    return HarnessUsage(
        input_tokens=total([count(u, "input_tokens") for u in usages]),
        output_tokens=total([count(u, "output_tokens") for u in usages]),
        cache_read_tokens=total([count(u, "cache_read_input_tokens") for u in usages]),
        cache_write_tokens=total([count(u, "cache_creation_input_tokens") for u in usages]),
    )


def _rejection(info: dict[str, Any]) -> UsageLimit:
    """The limit a rejected ``rate_limit_info`` describes (``resetsAt`` is epoch seconds)."""
    resets_at = info.get("resetsAt")
    reset = from_epoch(resets_at) if isinstance(resets_at, int | float) else None
    kind = str_field(info, "rateLimitType") or "usage"
    return UsageLimit(reset, f"Claude {kind} limit reached (rate_limit_event rejected)")


def _logged_in(output: str) -> bool | None:
    """``loggedIn`` of ``claude auth status --json`` (``None`` if it printed no such JSON);
    the object spans lines, and a warning may come before or after it."""
    try:
        status = json.loads(output[output.find("{") : output.rfind("}") + 1])
    except ValueError:
        return None
    logged_in = status.get("loggedIn") if isinstance(status, dict) else None
    return logged_in if isinstance(logged_in, bool) else None


def _denied_calls(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls an event reports refused: a ``result``'s ``permission_denials`` or
    one ``permission_denied`` event."""
    if event.get("type") == "result":
        listed = event.get("permission_denials")
        return [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    if event.get("type") == "system" and event.get("subtype") == "permission_denied":
        return [event]
    return []


def _denial_line(tool: object, arguments: object, cwd: str | None) -> str:
    """``Bash: COMMAND`` or ``TOOL TARGET`` (a path under ``cwd`` relative to it), cut."""
    name = tool if isinstance(tool, str) and tool else "a tool"
    command = str_field(arguments, "command")
    if command is not None:
        return one_line(f"{name}: {command}")
    target = call_target(arguments, cwd)
    return one_line(f"{name} {target}" if target else name)


def _synthetic(event: dict[str, Any]) -> bool:
    """An assistant message Claude Code wrote itself: an error, a limit, a login prompt."""
    message = event.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model == _SYNTHETIC or _api_error(event) is not None


def _api_error(event: dict[str, Any]) -> str | None:
    """The ``error`` kind of a synthetic assistant message (``rate_limit``,
    ``authentication_failed``, …): Claude Code's report, not the agent's words."""
    if event.get("type") != "assistant":
        return None
    error = str_field(event, "error")
    if error is None and event.get("is_api_error_message") is True:
        return "unknown"
    return error


def _assistant_text(event: dict[str, Any]) -> str | None:
    """The text blocks of an ``assistant`` event's message (tool calls left out)."""
    if event.get("type") != "assistant":
        return None
    return nonblank("\n".join(_message_texts(event)))


def _message_texts(event: dict[str, Any]) -> list[str]:
    """The texts of an event's ``message.content``: a string, or its ``text`` blocks.

    Tool calls, tool results and thinking blocks are not text a user wrote or reads.
    """
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = content if isinstance(content, list) else [content]
    kept = [block for block in blocks if not isinstance(block, dict) or block.get("type") == "text"]
    return texts(kept)


def _project_dirs(projects: Path, workdir: Path) -> list[Path]:
    """The project directories Claude Code may have used for ``workdir``.

    Names over 200 characters carry a runtime-dependent hash suffix, so every directory
    with the cut name as prefix is a candidate; the files' own ``cwd`` then decides.
    """
    name = _UNSAFE_IN_DIR_NAME.sub("-", unicodedata.normalize("NFC", str(workdir)))
    if len(name) <= _MAX_DIR_NAME:
        return [projects / name]
    prefix = f"{name[:_MAX_DIR_NAME]}-"
    return [entry for entry in list_dir(projects) if entry.name.startswith(prefix)]


def _is_session_file(path: Path) -> bool:
    """``<uuid>.jsonl``: a session transcript (not an ``agent-….jsonl`` or a sidecar)."""
    if path.suffix != ".jsonl":
        return False
    try:
        uuid.UUID(path.stem)
    except ValueError:
        return False
    return True


@dataclass
class _Head:
    """What a transcript's first lines say, gathered until the first prompt is found."""

    cwd: str | None = None
    started_at: datetime | None = None
    title: str = ""
    sidechain: bool = False

    def read(self, event: dict[str, Any]) -> None:
        """Take the first timestamp, the first cwd (and its sidechain flag), the first prompt."""
        self.started_at = self.started_at or parse_timestamp(event.get("timestamp"))
        if self.cwd is None and str_field(event, "cwd"):
            self.cwd = str_field(event, "cwd")
            self.sidechain = event.get("isSidechain") is True
        if not self.title:
            self.title = _prompt(event)

    @property
    def complete(self) -> bool:
        """Whether reading further could change nothing."""
        return self.cwd is not None and self.started_at is not None and bool(self.title)


def _session(path: Path) -> HarnessConversation | None:
    """The conversation in one transcript; ``None`` for a sidechain or one without a cwd."""
    head = _Head()
    for event in iter_jsonl(path):
        head.read(event)
        if head.complete:
            break
    if head.cwd is None or head.sidechain:
        return None
    return HarnessConversation(
        conversation_id=path.stem,
        workdir=head.cwd,
        started_at=head.started_at,
        updated_at=modified_at(path),
        title=head.title,
    )


def _prompt(event: dict[str, Any]) -> str:
    """The title this event gives if it is a prompt the user typed, else ``""``."""
    if event.get("type") != "user" or any(
        event.get(flag) is True for flag in ("isMeta", "isCompactSummary", "isSidechain")
    ):
        return ""
    typed = (text for text in _message_texts(event) if not _NOT_A_PROMPT.match(text))
    return next(filter(None, map(title_of, typed)), "")
