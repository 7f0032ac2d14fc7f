"""What every platform adapter offers, and the pieces they share.

A platform adapter is the only code that knows a harness CLI's argv and output shapes.
The agent activity asks it three things: the argv (and stdin) to launch (fresh or resuming a harness
session), the harness session id as output streams by (so it can heartbeat the id while
the process runs and resume it after a crash), and whether the output shows a usage
limit (so the run can wait for the reset instead of failing the spec). Sessions ask two
more: the assistant's final reply in a run's output (for the session transcript) and the
harness's own conversations for a workdir (to resume one Canopy did not start).
``canopy graph logs`` asks it how a run's output reads for a person (:meth:`Platform.render`
and :meth:`Platform.render_end`, in the shared forms of :mod:`canopy.platforms.view`).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from canopy.permissions import Permissions
from canopy.platforms.usage import HarnessUsage
from canopy.platforms.view import DENIED, FAILED, LIMIT, RETRY, LogContext, marked, usage_line

LimitKind = Literal["usage", "rate"]
MIN_LIMIT_WAIT = timedelta(seconds=60)
FALLBACK_LIMIT_WAIT = timedelta(hours=6)
RATE_LIMIT_FIRST_WAIT = timedelta(minutes=1)
RATE_LIMIT_MAX_WAIT = timedelta(hours=1)
LONG_RETRY_WAIT = timedelta(minutes=5)
"""The longest pause a CLI may announce before retrying by itself and be left to it;
a longer one (an in-CLI sleep until a quota resets) is handled as a usage limit."""
MAX_REPORTED_RESET = timedelta(days=8)
"""The furthest reset believed as reported: a weekly window is at most 7 days away, and a
day more covers a time zone misread. Anything later is a misread date (absurd)."""


@dataclass(frozen=True)
class UsageLimit:
    """A usage limit found in a harness's output.

    ``reset_at`` is the reset time the harness reported (timezone-aware UTC), or ``None``
    when its message gave none; callers turn it into a retry time with :func:`limit_wait`.
    ``message`` is the harness's own wording, the line the limit was read from.
    ``kind`` is ``usage`` for a plan's usage window or quota (hours or days long) and
    ``rate`` for an API key's rate limit (per minute), whose unknown reset is waited out
    with a short backoff rather than the 6-hour fallback.
    """

    reset_at: datetime | None
    message: str
    kind: LimitKind = "usage"


@dataclass(frozen=True)
class LimitWait:
    """When to try again after a usage limit, and a one-line reason that says why then.

    The reason holds the harness's message and the chosen time, so a blocker, ``graph
    info`` and a log all show what the wait is based on, and when a fallback was taken.
    """

    retry_at: datetime
    reason: str


@dataclass(frozen=True)
class Invocation:
    """One headless run of a harness: its argv, and the text it reads on stdin.

    Built-in harnesses read the prompt on stdin: an argv string is limited to 128 KiB on
    Linux, so a prompt holding a large spec would fail to launch at all.
    """

    argv: list[str]
    stdin: str | None = None


@dataclass(frozen=True)
class RetryNotice:
    """A line in which the CLI says it is retrying or reconnecting by itself.

    Such output is not progress: a CLI that prints only these for ``stall_minutes`` cannot
    reach its API and is a stalled node. ``wait`` is the pause the CLI announced before
    its next attempt, when it named one; a long one (an in-CLI sleep until a quota resets)
    is handled as a usage limit with that reset instead of being waited out in the CLI.
    """

    message: str
    wait: timedelta | None = None


@dataclass(frozen=True)
class CliChecks:
    """How ``canopy doctor`` checks a harness CLI without a model call.

    ``version`` prints its version (its first ``N.N.N`` is read); ``auth`` (when the CLI
    has such a command) reports whether anyone is signed in, which ``signed_in`` reads
    from its output (``None``: cannot tell). The launch argv itself is checked by running
    it with no prompt: a CLI that accepts its options then complains of the missing
    prompt (``accepted``), and one with nobody signed in may say so first
    (``signed_out``).
    """

    version: list[str]
    accepted: re.Pattern[str]
    auth: list[str] | None = None
    signed_in: Callable[[str], bool | None] | None = None
    signed_out: re.Pattern[str] | None = None
    tested: tuple[str, ...] = ()
    """The versions Canopy's tests ran (``package.json`` pins them)."""
    warnings: tuple[tuple[re.Pattern[str], str], ...] = ()
    """What the argv check may print that works but deserves a warning, each with the
    warning to give (a sandbox the CLI could not start, say)."""


@dataclass(frozen=True)
class HarnessConversation:
    """One conversation in a harness's own on-disk history.

    ``conversation_id`` is the id the harness resumes with (Claude Code's session id,
    Codex's thread id, Gemini CLI's session id), so it can be passed straight back as
    ``resume_session_id``. Times are timezone-aware UTC, ``None`` when the file gives none.
    """

    conversation_id: str
    workdir: str
    started_at: datetime | None
    updated_at: datetime | None
    title: str

    def __post_init__(self) -> None:
        """Never updated before it started: ``updated_at`` is often the file's modification
        time, which the kernel takes from a coarse clock that can run a few milliseconds
        behind the timestamp the harness wrote into the file just before."""
        if self.started_at and self.updated_at and self.updated_at < self.started_at:
            object.__setattr__(self, "updated_at", self.started_at)


class Platform(ABC):
    """One harness CLI: how to launch it and how to read what it prints."""

    name: str
    efforts: ClassVar[tuple[str, ...] | None] = None
    """The ``effort`` values the CLI takes (any case), where it names them; ``None``: any
    value is passed on as given."""
    takes_session_id: ClassVar[bool] = False
    """Whether a fresh run can be given the session id Canopy chose (``session_id``), so
    the id is known before the CLI prints anything."""

    @abstractmethod
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
        """One headless run; no shell is involved, so values stay single args.

        ``permissions`` is what the agent may do (:mod:`canopy.permissions`), mapped to the
        CLI's own flags; ``session_id`` is the id a fresh run takes where the CLI lets
        Canopy choose it (:attr:`takes_session_id`), ignored when resuming.
        """

    def budget_flags(self, usd: float) -> list[str]:
        """The options that stop one run of the CLI once it has spent ``usd`` (what the
        graph's budget leaves the node), for a CLI that has such a cap; none by default: a
        CLI without one runs to its end, and may overshoot the budget by what it spends."""
        return []

    @abstractmethod
    def session_id_from_line(self, line: str) -> str | None:
        """The harness session id if this output line announces one; the latest one wins."""

    @abstractmethod
    def usage_limit(self, output: str, now: datetime) -> UsageLimit | None:
        """The usage limit the run's output reports, if any (``now`` is timezone-aware)."""

    def usage(self, output: str) -> HarnessUsage | None:
        """The tokens, cost, turns, duration and model this run's output reports.

        ``None`` (this default) when the harness reports none: a user-defined platform's
        output has no known shape.
        """
        return None

    def denials(self, output: str) -> list[str]:
        """Each permission denial this run's output reports, one line each, in order.

        An agent refused a write or a command often still exits 0; these lines are how a
        node run says so. Empty (this default) when the harness reports none it can tell.
        """
        return []

    def retry_notice(self, line: str) -> RetryNotice | None:
        """The retry this output line announces, if it is one (see :class:`RetryNotice`)."""
        return None

    def cli_checks(self) -> CliChecks | None:
        """How ``canopy doctor`` checks this CLI (``None``, this default: it cannot)."""
        return None

    def is_progress(self, line: str) -> bool:
        """Whether this output line shows the run getting on: any non-blank line but a
        retry notice, by default (plain-text harnesses)."""
        return bool(line.strip()) and self.retry_notice(line) is None

    def reply_text(self, output: str) -> str | None:
        """The assistant's final reply in this run's output: the text a user would read.

        This default serves harnesses that print plain text (user-defined platforms): the
        whole output, stripped, is the reply; ``None`` when it is blank.
        """
        return nonblank(output)

    def conversations(self, workdir: Path) -> list[HarnessConversation] | None:
        """The harness's own conversations whose cwd is ``workdir``, most recent first.

        ``None`` (this default) means Canopy cannot read this harness's history, which is
        not the same as an empty one: a conversation id given for such a harness cannot
        be checked, so it is taken on trust. Implementations never raise for an
        unreadable or corrupt file; they skip it.
        """
        return None

    def render(self, line: str, seen: LogContext) -> list[str]:
        """This output line as a person reads it: none, one or several lines.

        ``seen`` is what the run's earlier lines said (one per run's output, fed every
        line in order). This default serves plain-text harnesses (user-defined platforms):
        a retry notice after its mark, any other non-blank line as it is, a JSON line,
        whose shape no one here knows, left out.
        """
        notice = self.retry_notice(line)
        if notice is not None:
            return [f"{RETRY} {notice.message}"]
        if not line.strip() or json_event(line) is not None:
            return []
        return [line.rstrip()]

    def render_end(self, output: str, seen: LogContext, now: datetime) -> list[str]:
        """What a finished run came to, after its lines: the text it still held back, each
        permission denial, the usage limit it hit (with the retry time the engine takes)
        and the usage it reported, read as the engine reads them, so the log says what
        ``graph info`` records. ``now`` is when the output was written: a reset the CLI
        gave as a time of day is read against it.
        """
        limit = self.usage_limit(output, now)
        return [
            *seen.flush(),
            *(f"{DENIED} denied: {denial}" for denial in self.denials(output)),
            *([f"{LIMIT} {limit_wait(limit, now).reason}"] if limit is not None else []),
            *usage_line(self.usage(output)),
        ]


def rate_limit_backoff(streak: int) -> timedelta:
    """How long to wait out an API rate limit that named no reset, after ``streak``
    earlier rate limits in a row: 1, 2, 4, … minutes, at most an hour.

    An API key's rate limit is per minute: a retry a minute later usually passes, and
    one that keeps failing backs off instead of spending a launch every minute all night.
    """
    doublings: int = min(max(streak, 0), 6)
    return min(RATE_LIMIT_FIRST_WAIT * (1 << doublings), RATE_LIMIT_MAX_WAIT)


def clamp_reset(reset_at: datetime | None, now: datetime) -> datetime:
    """When to retry after a usage limit: the reported reset, never sooner than now+60 s.

    An unknown reset (``None``) or an absurd one (more than :data:`MAX_REPORTED_RESET`
    ahead: a misread date) waits the 6-hour fallback: every harness limit that omits its
    reset is a multi-hour or daily window, and retrying early would only spend a launch
    to hit the same limit again. A reset already past (clock skew, a stale message) waits
    the 60-second minimum, so a run never spins. A weekly reset days away is honoured.
    (An API rate limit without a reset backs off instead: :func:`limit_wait`.)
    """
    if reset_at is None or reset_at > now + MAX_REPORTED_RESET:
        return now + FALLBACK_LIMIT_WAIT
    return max(reset_at, now + MIN_LIMIT_WAIT)


def limit_wait(limit: UsageLimit, now: datetime, *, streak: int = 0) -> LimitWait:
    """The retry time for ``limit`` and the reason, naming both.

    A rate limit (``kind == "rate"``) without a reset waits :func:`rate_limit_backoff`
    for ``streak``, the rate limits the same work met just before; any other limit
    waits :func:`clamp_reset`'s time.
    """
    if limit.reset_at is None and limit.kind == "rate":
        retry_at = now + rate_limit_backoff(streak)
        shown = f"{retry_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
        why = f"an API rate limit with no reset time; retrying at {shown}, backing off"
        return LimitWait(retry_at, f"{limit.message} ({why})")
    retry_at = clamp_reset(limit.reset_at, now)
    shown = f"{retry_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    if limit.reset_at is None:
        why = f"no reset time given; retrying at {shown}, the 6-hour fallback"
    elif retry_at == limit.reset_at:
        why = f"resets at {shown}"
    else:
        reported = f"{limit.reset_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
        if limit.reset_at < now:
            bound = "has passed"
        elif limit.reset_at < now + MIN_LIMIT_WAIT:
            bound = "is less than a minute ahead"
        else:
            bound = "is too far ahead to be right"
        why = f"reported reset {reported} {bound}; retrying at {shown}"
    return LimitWait(retry_at, f"{limit.message} ({why})")


def json_event(line: str) -> dict[str, Any] | None:
    """The JSON object on this line, or ``None`` for plain text (stderr, banners, blanks).

    Harnesses interleave JSON events with plain text; only whole-line objects are events.
    The event is shared with every other reader of the same line: never change it.
    """
    stripped = line.strip()
    if not stripped.startswith("{"):
        return None
    return _json_object(stripped)


@lru_cache(maxsize=4)
def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed, once for the several questions asked of one line in a row (the
    output watcher asks each line's session id, whether it is a retry notice and whether
    it is progress, which parsed it three to four times)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def json_events(output: str) -> list[dict[str, Any]]:
    """The JSON events of a run's output, in order, plain-text lines left out."""
    return [event for event in map(json_event, output.splitlines()) if event is not None]


def nonblank(text: str | None) -> str | None:
    """``text`` stripped, or ``None`` when there is nothing to read in it."""
    stripped = (text or "").strip()
    return stripped or None


def str_field(mapping: object, key: str) -> str | None:
    """``mapping[key]`` when ``mapping`` is a dict and the value a non-empty string."""
    if not isinstance(mapping, dict):
        return None
    value = mapping.get(key)
    return value if isinstance(value, str) and value else None


def first_line(text: str, limit: int = 300) -> str:
    """The first non-blank line of ``text``, stripped and cut to ``limit`` characters.

    Limit messages end up in blockers and logs, which want one readable line.
    """
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def option(flag: str, value: str | None) -> list[str]:
    """``[flag, value]`` when the value is set (non-empty), else nothing."""
    return [flag, value] if value else []


class JsonLinesPlatform(Platform, ABC):
    """A harness that prints one JSON event per line on stdout.

    A limit is read from what the harness itself reports, in this order: structured limit
    payloads (:meth:`limit_in_events`), the failure text of its error events, then its
    plain-text lines (stderr, crash output). Assistant text and tool output are never
    read, so an agent that merely talks about usage limits is not mistaken for one, and
    a run whose events say it finished its turn is never limit-blocked.
    """

    def usage_limit(self, output: str, now: datetime) -> UsageLimit | None:
        """The structured limit, worded (and timed, if it gave no reset) by the failure text;
        a rate limit when either says so (only a rate limit words itself as one)."""
        events, plain = split_output(output)
        if any(self.succeeded(event) for event in events):
            return None
        texts = [text for text in map(self.error_text, events) if text]
        texts += self.failure_lines(plain)
        in_text = next(filter(None, (self.limit_in_text(text, now) for text in texts)), None)
        in_events = self.limit_in_events(events)
        if in_text is None or in_events is None:
            return in_events or in_text
        kind: LimitKind = "rate" if "rate" in (in_events.kind, in_text.kind) else "usage"
        return UsageLimit(in_events.reset_at or in_text.reset_at, in_text.message, kind)

    def is_progress(self, line: str) -> bool:
        """Only the harness's events are progress: stderr text (stack traces, banners)
        and its retry notices are not."""
        return json_event(line) is not None and self.retry_notice(line) is None

    def render(self, line: str, seen: LogContext) -> list[str]:
        """Plain text and retry notices as every platform shows them; a failure event as
        one marked reading, once (a CLI repeats its failure in its final event); any other
        event as the adapter shows it (:meth:`render_event`)."""
        event = json_event(line)
        if event is None or self.retry_notice(line) is not None:
            return super().render(line, seen)
        failure = self.error_text(event)
        if failure is None:
            return self.render_event(event, seen)
        repeated, seen.failure = failure == seen.failure, failure
        return [] if repeated else [*seen.flush(), *marked(FAILED, failure)]

    @abstractmethod
    def render_event(self, event: dict[str, Any], seen: LogContext) -> list[str]:
        """One event that is not a failure, as a person reads it: the agent's text, each
        tool call with what it works on, each tool call that failed; the CLI's own
        bookkeeping (session start, its final counts) shows nothing here."""

    def failure_lines(self, plain: list[str]) -> list[str]:
        """The plain-text lines that may report this run's failure (all, by default)."""
        return plain

    @abstractmethod
    def succeeded(self, event: dict[str, Any]) -> bool:
        """Whether this event says the run's turn completed successfully."""

    @abstractmethod
    def error_text(self, event: dict[str, Any]) -> str | None:
        """The failure message this event carries, if it is an error event."""

    @abstractmethod
    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """The usage limit a failure message words, with its reset time if it gives one."""

    def limit_in_events(self, events: list[dict[str, Any]]) -> UsageLimit | None:
        """A limit reported as structured events; only some harnesses emit one."""
        return None

    @abstractmethod
    def reply_text(self, output: str) -> str | None:
        """The final reply, read from the events: raw JSON lines are never what a user reads."""

    def usage(self, output: str) -> HarnessUsage | None:
        """The usage the run's events report, ``None`` when they report none."""
        found = self.usage_in_events(json_events(output))
        return None if found.empty else found

    @abstractmethod
    def usage_in_events(self, events: list[dict[str, Any]]) -> HarnessUsage:
        """The usage these events report (an empty one when they report none)."""

    @abstractmethod
    def conversations(self, workdir: Path) -> list[HarnessConversation]:
        """The built-in harnesses keep a readable history, so they always answer a list."""


def split_output(output: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON events and the non-blank plain-text lines of a run's output."""
    events: list[dict[str, Any]] = []
    plain: list[str] = []
    for line in output.splitlines():
        event = json_event(line)
        if event is not None:
            events.append(event)
        elif line.strip():
            plain.append(line.strip())
    return events, plain
