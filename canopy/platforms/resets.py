"""Turning the reset times harnesses print into aware UTC datetimes.

Harnesses word resets for humans: an epoch after a pipe, a wall-clock time in the local
(or a named) timezone, sometimes with a date, or a duration. These helpers read each form
relative to ``now`` so the adapters stay a list of patterns.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH_PATTERN = "|".join(MONTHS)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAY_PATTERN = "|".join(WEEKDAYS)

_LOCALTIME = "/etc/localtime"
# A wall-clock time this far in the past is read as the next occurrence (tomorrow, next
# year): a message printed at 11:50pm saying "resets 2am" means tomorrow, while a reset
# that passed a few minutes ago is just late and is left for clamping.
_ROLLOVER_GRACE = timedelta(hours=1)

_DURATION_PART = re.compile(
    r"(?P<amount>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>milliseconds?|ms|days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)"
    r"(?![a-z])",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"ms": 0.001, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def from_epoch(seconds: float) -> datetime | None:
    """An epoch-seconds reset as UTC, ``None`` when the number cannot be a timestamp."""
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def parse_duration(text: str) -> timedelta | None:
    """``2 hours 5 minutes``, ``4h28m20s``, ``58.2s`` → a timedelta; ``None`` if no unit.

    "less than a minute" carries no number and reads as zero (clamping makes it 60 s).
    """
    parts = list(_DURATION_PART.finditer(text))
    if not parts:
        return timedelta(0) if "less than a minute" in text.lower() else None
    seconds = sum(float(part["amount"]) * _unit_seconds(part["unit"]) for part in parts)
    return timedelta(seconds=seconds)


def _unit_seconds(unit: str) -> float:
    """Seconds per ``unit``; milliseconds are the one unit not named by its first letter."""
    lowered = unit.lower()
    if lowered.startswith("mil") or lowered == "ms":
        return _UNIT_SECONDS["ms"]
    return _UNIT_SECONDS[lowered[0]]


def _zone(name: str | None, now: datetime) -> tzinfo:
    """The named IANA zone, else the machine's local zone (where the harness printed).

    Harnesses render resets in the local timezone of the host running them, which is the
    host running this adapter (agent activities run where the workdir is).
    """
    if name:
        try:
            return ZoneInfo(name.strip())
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return _local_zone(now)


def _local_zone(now: datetime) -> tzinfo:
    """The machine's zone with its daylight-saving rules (``$TZ``, else /etc/localtime).

    ``now.astimezone()`` alone gives today's fixed offset, which is an hour off for a
    reset on a date across a daylight-saving change; it is the last resort.
    """
    name = os.environ.get("TZ", "").removeprefix(":")
    try:
        if name:
            return ZoneInfo(name)
        with open(_LOCALTIME, "rb") as localtime:
            return ZoneInfo.from_file(localtime, key="localtime")
    except (OSError, ValueError, ZoneInfoNotFoundError):
        local = now.astimezone().tzinfo
        return local if local is not None else UTC


def clock_reset(now: datetime, match: re.Match[str]) -> datetime | None:
    """The UTC reset a matched wall-clock phrase names, ``None`` if it names no real time.

    Reads the named groups ``hour``, ``minute``, ``meridiem``, ``tz``, ``month``, ``day``,
    ``year`` and ``weekday`` (all but ``hour`` optional), so every adapter's pattern shares
    one reader. A time of day alone is its next occurrence, a weekday its next such day
    (today while the time is still ahead), a date without a year its next occurrence.
    """
    groups = match.groupdict()
    hour = _hour_24(int(groups["hour"]), groups.get("meridiem"))
    minute = int(groups.get("minute") or 0)
    if hour is None or minute > 59:
        return None
    tz = _zone(groups.get("tz"), now)
    local_now = now.astimezone(tz)
    on = _calendar_date(local_now, groups)
    if on is None and groups.get("month"):
        return None
    candidate = datetime.combine(on or local_now.date(), time(hour, minute), tzinfo=tz)
    weekday = groups.get("weekday")
    if on is None and weekday:
        ahead = (WEEKDAYS.index(weekday[:3].lower()) - local_now.weekday()) % 7
        candidate = _days_later(candidate, ahead)
        if candidate < local_now - _ROLLOVER_GRACE:
            candidate = _days_later(candidate, 7)
    elif candidate < local_now - _ROLLOVER_GRACE and not groups.get("year"):
        candidate = _days_later(candidate, 1) if on is None else _next_year(candidate)
    return candidate.astimezone(UTC)


def _hour_24(hour: int, meridiem: str | None) -> int | None:
    """``3`` + ``pm`` → 15, ``12am`` → 0; ``None`` for an impossible hour."""
    if meridiem is None:
        return hour if 0 <= hour <= 23 else None
    if not 1 <= hour <= 12:
        return None
    base = 0 if hour == 12 else hour
    return base + 12 if meridiem.lower().startswith("p") else base


def _calendar_date(local_now: datetime, groups: dict[str, str | None]) -> date | None:
    """The date named by ``month``/``day``/``year`` groups (year defaults to now's)."""
    month, day = groups.get("month"), groups.get("day")
    if not month or not day:
        return None
    year = int(groups.get("year") or local_now.year)
    try:
        return date(year, MONTHS.index(month[:3].lower()) + 1, int(day))
    except ValueError:
        return None


def _days_later(moment: datetime, days: int) -> datetime:
    """The same wall-clock time ``days`` later (in the moment's own zone, across DST)."""
    return datetime.combine(moment.date() + timedelta(days=days), moment.timetz())


def _next_year(moment: datetime) -> datetime:
    """The same wall-clock moment a year later (29 Feb becomes 28 Feb)."""
    try:
        return moment.replace(year=moment.year + 1)
    except ValueError:
        return moment.replace(year=moment.year + 1, day=28)
