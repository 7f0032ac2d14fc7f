"""User-defined platforms: an argv template from the config file.

Placeholders ``{prompt}``, ``{model}``, ``{effort}`` and ``{session_id}`` are substituted
inside each argv element, once and without a shell. A template without ``{prompt}``
gets the prompt on stdin, which no argv size limit applies to (one argv element holds at
most 128 KiB on Linux). a value can never become a second
element, run a command, or expand another placeholder. An element with a placeholder
whose value is unset (``{model}`` with no model) is dropped; when that element is only
the placeholder and the element before it is a literal option (``--model``), the option
goes too, so ``["tool", "--model", "{model}", "{prompt}"]`` becomes ``["tool", PROMPT]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from canopy.permissions import Permissions
from canopy.platforms.base import Invocation, Platform, UsageLimit, first_line
from canopy.platforms.resets import from_epoch

PLACEHOLDERS = ("prompt", "model", "effort", "session_id")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class TemplatePlatform(Platform):
    """A command configured under ``[platforms.NAME]`` in the config file.

    Without ``resume_argv`` the harness cannot resume, so a resume request starts a fresh
    conversation with ``argv`` (the work goes on, without the earlier context). Without
    ``session_id_pattern`` no session id is ever read; without ``limit_pattern`` no usage
    limit is ever detected. A ``limit_pattern`` may name its reset with a group
    ``reset_epoch`` (epoch seconds) or ``reset_seconds`` (seconds from now).
    """

    name: str
    argv: tuple[str, ...]
    resume_argv: tuple[str, ...] | None = None
    session_id_pattern: re.Pattern[str] | None = None
    limit_pattern: re.Pattern[str] | None = None

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
        """``resume_argv`` when resuming and configured, else ``argv``, substituted; the
        prompt goes on stdin when the template has no ``{prompt}``."""
        values = {"prompt": prompt, "model": model or None, "effort": effort or None}
        template = self.argv
        if resume_session_id and self.resume_argv is not None:
            template = self.resume_argv
            values["session_id"] = resume_session_id
        in_argv = any("{prompt}" in element for element in template)
        return Invocation(substitute(template, values), stdin=None if in_argv else prompt)

    def session_id_from_line(self, line: str) -> str | None:
        """Group 1 of ``session_id_pattern`` on this line."""
        if self.session_id_pattern is None:
            return None
        found = self.session_id_pattern.search(line)
        return found.group(1) if found is not None and found.group(1) else None

    def usage_limit(self, output: str, now: datetime) -> UsageLimit | None:
        """The first ``limit_pattern`` match, with its reset group when it has one."""
        if self.limit_pattern is None:
            return None
        found = self.limit_pattern.search(output)
        if found is None:
            return None
        return UsageLimit(_reset(found, now), first_line(found.group(0)) or self.name)


def substitute(template: tuple[str, ...], values: dict[str, str | None]) -> list[str]:
    """The argv with placeholders filled; unset ones drop their element (and its flag)."""
    argv: list[str] = []
    after_literal_flag = False
    for element in template:
        names = PLACEHOLDER.findall(element)
        if all(values.get(name) is not None for name in names):
            argv.append(PLACEHOLDER.sub(lambda found: values.get(found[1]) or "", element))
            after_literal_flag = not names and element.startswith("-")
            continue
        if after_literal_flag and PLACEHOLDER.fullmatch(element):
            argv.pop()
        after_literal_flag = False
    return argv


def _reset(found: re.Match[str], now: datetime) -> datetime | None:
    """The reset named by a ``reset_epoch`` or ``reset_seconds`` group, if present."""
    groups = found.groupdict()
    epoch, seconds = groups.get("reset_epoch"), groups.get("reset_seconds")
    try:
        if epoch:
            return from_epoch(float(epoch))
        if seconds:
            return now + timedelta(seconds=float(seconds))
    except (ValueError, OverflowError):
        return None
    return None
