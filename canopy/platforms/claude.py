"""Claude Code (``claude``) in print mode with ``stream-json`` output.

argv: ``claude -p --output-format stream-json --verbose [--model M] [--effort E]
[--resume ID] -- PROMPT``. ``-p`` is a boolean flag and the prompt a positional argument,
so the prompt goes last, after ``--``: a prompt starting with ``-`` (a markdown list) is
then never read as an option. Effort uses Claude Code's ``--effort`` flag.

Session id: the ``session_id`` of the ``system``/``init`` event (and of the final
``result`` event). Usage limit: a ``rate_limit_event`` whose ``rate_limit_info.status``
is ``rejected`` (exact ``resetsAt`` epoch), and/or an error result or plain-text line
saying ``Claude AI usage limit reached|<epoch>``, ``5-hour limit reached ∙ resets 3pm``,
``You've hit your limit · resets 2pm (Asia/Shanghai)`` and the like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from canopy.platforms.base import (
    JsonLinesPlatform,
    UsageLimit,
    first_line,
    json_event,
    option,
    str_field,
)
from canopy.platforms.resets import MONTH_PATTERN, clock_reset, from_epoch

# "limit reached" alone also names the context window ("Context limit reached · /compact"),
# so it only counts next to a reset or as a usage limit.
_LIMIT_TEXT = re.compile(
    r"usage limit reached|limit reached\W+resets?\b|hit your (?:usage )?limit|out of extra usage",
    re.IGNORECASE,
)
_EPOCH = re.compile(r"limit reached\|(?P<epoch>\d{9,12})", re.IGNORECASE)
_RESETS = re.compile(
    r"\bresets?\s+(?:at\s+)?"
    rf"(?:(?P<month>{MONTH_PATTERN})[a-z]*\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<meridiem>[ap])\.?m\b\.?"
    r"(?:\s*\((?P<tz>[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)*)\))?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ClaudePlatform(JsonLinesPlatform):
    """Claude Code; also the demo platform, whose agent speaks the same stream-json."""

    name: str = "claude"
    executable: tuple[str, ...] = ("claude",)
    extra_args: tuple[str, ...] = ()

    def build_argv(
        self,
        prompt: str,
        *,
        model: str | None,
        effort: str | None,
        resume_session_id: str | None,
    ) -> list[str]:
        """``claude -p --output-format stream-json --verbose [options] -- PROMPT``."""
        return [
            *self.executable,
            *self.extra_args,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            *option("--model", model),
            *option("--effort", effort),
            *option("--resume", resume_session_id),
            "--",
            prompt,
        ]

    def session_id_from_line(self, line: str) -> str | None:
        """``session_id`` of the ``system`` (init) and ``result`` events."""
        event = json_event(line)
        if event is None or event.get("type") not in ("system", "result"):
            return None
        return str_field(event, "session_id")

    def succeeded(self, event: dict[str, Any]) -> bool:
        """A ``result`` event that is not an error."""
        return event.get("type") == "result" and event.get("is_error") is False

    def error_text(self, event: dict[str, Any]) -> str | None:
        """The text of an error ``result`` (where print mode reports a limit)."""
        if event.get("type") == "result" and event.get("is_error") is True:
            return str_field(event, "result")
        return None

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """``… usage limit reached|<epoch>`` or ``… limit reached ∙ resets 3pm (Zone)``."""
        if not _LIMIT_TEXT.search(text):
            return None
        epoch = _EPOCH.search(text)
        if epoch is not None:
            return UsageLimit(from_epoch(int(epoch["epoch"])), first_line(text))
        clock = _RESETS.search(text)
        reset = clock_reset(now, clock) if clock is not None else None
        return UsageLimit(reset, first_line(text))

    def limit_in_events(self, events: list[dict[str, Any]]) -> UsageLimit | None:
        """A ``rate_limit_event`` with status ``rejected``; ``allowed*`` are only notices."""
        for event in events:
            info = event.get("rate_limit_info") if event.get("type") == "rate_limit_event" else None
            if isinstance(info, dict) and info.get("status") == "rejected":
                return _rejection(info)
        return None


def _rejection(info: dict[str, Any]) -> UsageLimit:
    """The limit a rejected ``rate_limit_info`` describes (``resetsAt`` is epoch seconds)."""
    resets_at = info.get("resetsAt")
    reset = from_epoch(resets_at) if isinstance(resets_at, int | float) else None
    kind = str_field(info, "rateLimitType") or "usage"
    return UsageLimit(reset, f"Claude {kind} limit reached (rate_limit_event rejected)")
