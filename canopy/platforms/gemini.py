"""Google Gemini CLI (``gemini``) in headless mode with ``stream-json`` output.

argv: ``gemini --output-format stream-json [-m M] [--resume ID] --prompt=PROMPT``. The
``--prompt=`` form binds the prompt to its option even when it starts with ``-``. Gemini
CLI has no per-run effort flag (thinking budgets live in its settings), so ``effort`` is
not passed.

Session id: ``session_id`` of the ``init`` event. Usage limit: an ``error`` event, an
error ``result`` or a plain-text line naming an exhausted quota ("You have exhausted your
capacity on this model. Your quota will reset after 4h28m20s.", "Quota exceeded …
Please retry in 42s", ``RESOURCE_EXHAUSTED``, ``"retryDelay": "58s"``).
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
from canopy.platforms.resets import parse_duration

_LIMIT_TEXT = re.compile(
    r"RESOURCE_EXHAUSTED|quota exceeded|exceeded your current quota|TerminalQuotaError"
    r"|exhausted your (?:capacity|quota|daily quota)|resource (?:has been )?exhausted"
    r"|reached your daily [\w.-]+ quota",
    re.IGNORECASE,
)
_RESET = re.compile(
    r"(?:reset after|retry in|retryDelay\W*)\s*"
    r"(?P<duration>\d[\d.]*\s*(?:[hms]+\s*\d[\d.]*\s*)*[hms]+)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GeminiPlatform(JsonLinesPlatform):
    """Gemini CLI in non-interactive (``--prompt``) mode."""

    name: str = "gemini"
    executable: tuple[str, ...] = ("gemini",)
    extra_args: tuple[str, ...] = ()

    def build_argv(
        self,
        prompt: str,
        *,
        model: str | None,
        effort: str | None,
        resume_session_id: str | None,
    ) -> list[str]:
        """``gemini --output-format stream-json [-m M] [--resume ID] --prompt=PROMPT``."""
        return [
            *self.executable,
            *self.extra_args,
            "--output-format",
            "stream-json",
            *option("-m", model),
            *option("--resume", resume_session_id),
            f"--prompt={prompt}",
        ]

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

    def limit_in_text(self, text: str, now: datetime) -> UsageLimit | None:
        """An exhausted-quota message, with "reset after"/"retry in" as the reset."""
        if not _LIMIT_TEXT.search(text):
            return None
        found = _RESET.search(text)
        delay = parse_duration(found["duration"]) if found else None
        return UsageLimit(now + delay if delay is not None else None, first_line(text))
