"""OpenAI Codex CLI (``codex exec``) with ``--json`` event output.

argv: ``codex exec --json [--model M] [-c model_reasoning_effort=E] -- PROMPT``, and to
resume ``codex exec --json [...] resume ID -- PROMPT``. The ``--`` keeps a prompt that
starts with ``-`` (or is the word ``resume``) a prompt.

Session id: ``thread_id`` of the ``thread.started`` event. Usage limit: the message of an
``error`` or ``turn.failed`` event (or a plain-text line) saying "You've hit your usage
limit. … try again at 3:05 PM." (local time; ``Sep 18th, 2025 3:05 PM`` when the reset is
on another day) or, in older releases, "… try again in 2 hours 5 minutes.".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from canopy.platforms.base import (
    JsonLinesPlatform,
    UsageLimit,
    first_line,
    json_event,
    option,
    str_field,
)
from canopy.platforms.resets import MONTH_PATTERN, clock_reset, parse_duration

_LIMIT_TEXT = re.compile(r"(?:hit|reached) your usage limit|usage_limit_reached", re.IGNORECASE)
_TRY_AT = re.compile(
    r"try again at\s+"
    rf"(?:(?P<month>{MONTH_PATTERN})[a-z]*\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+"
    r"(?:(?P<year>\d{4}),?\s+)?)?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<meridiem>[ap])\.?m\b",
    re.IGNORECASE,
)
_TRY_IN = re.compile(r"try again in\s+(?P<duration>[^.!\n]+)", re.IGNORECASE)


@dataclass(frozen=True)
class CodexPlatform(JsonLinesPlatform):
    """Codex CLI in non-interactive ``exec`` mode."""

    name: str = "codex"
    executable: tuple[str, ...] = ("codex",)
    extra_args: tuple[str, ...] = ()

    def build_argv(
        self,
        prompt: str,
        *,
        model: str | None,
        effort: str | None,
        resume_session_id: str | None,
    ) -> list[str]:
        """``codex exec --json [options] [resume ID] -- PROMPT``."""
        effort_override = f"model_reasoning_effort={effort}" if effort else None
        resume = ["resume", resume_session_id] if resume_session_id else []
        return [
            *self.executable,
            "exec",
            *self.extra_args,
            "--json",
            *option("--model", model),
            *option("-c", effort_override),
            *resume,
            "--",
            prompt,
        ]

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
        """The message of an ``error`` event or of a ``turn.failed`` event's ``error``."""
        if event.get("type") == "error":
            return str_field(event, "message")
        if event.get("type") == "turn.failed":
            return str_field(event.get("error"), "message")
        return None

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """A "you've hit your usage limit" message, reset "at <time>" or "in <duration>"."""
        if not _LIMIT_TEXT.search(text):
            return None
        return UsageLimit(_reset(text, now), first_line(text))


def _reset(text: str, now: datetime) -> datetime | None:
    """The reset a Codex limit message names; ``None`` for "Try again later."."""
    at = _TRY_AT.search(text)
    if at is not None:
        return clock_reset(now, at)
    within = _TRY_IN.search(text)
    delay: timedelta | None = parse_duration(within["duration"]) if within else None
    return now + delay if delay is not None else None
