"""What a schedule accepts: a cron expression and an IANA time zone, checked before
anything is written or sent to Temporal.

Temporal would reject a malformed cron expression too, but only once the command has
reached it, and in its own words; checking here gives one line naming the field and the
rule, and the same line whether Temporal is up or not. The forms accepted are the ones
the docs show (five fields, or a ``@daily``-style shorthand); anything Temporal rejects
beyond them is still translated into one line where the schedule is created.
"""

from __future__ import annotations

import re

from canopy.errors import Refused
from canopy.limits import check_text

CRON_MAX_LENGTH = 200
"""The longest cron expression accepted (the store's column)."""
SHORTHANDS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _DAYS),
)
"""Each field of a five-field expression: its name, its range and the names it takes
(``JAN`` is 1, ``SUN`` is 0; 7 is Sunday too)."""
_PART = re.compile(r"(?P<range>\*|\?|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)?)(?:/(?P<step>[0-9]+))?")


def check_cron(expression: str) -> str:
    """``expression`` stripped, or the one-line refusal naming what is wrong with it."""
    cron = " ".join(check_text(expression, "cron expression", CRON_MAX_LENGTH).split())
    if cron.startswith("@"):
        if cron.lower() not in SHORTHANDS:
            raise Refused(
                f"cron expression {cron!r}: unknown shorthand; use one of {_shorthands()}"
            )
        return cron.lower()
    fields = cron.split(" ")
    if len(fields) != len(_FIELDS):
        raise Refused(
            f"cron expression {cron!r} has {len(fields)} field(s); it needs 5 (minute hour "
            f"day-of-month month day-of-week), or one of {_shorthands()}"
        )
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        problem = _field_problem(text, low, high, names)
        if problem is not None:
            raise Refused(f"cron expression {cron!r}: {name} {text!r}: {problem}")
    return cron


def _shorthands() -> str:
    return ", ".join(SHORTHANDS)


def _field_problem(text: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    """What is wrong with one field (a comma-separated list of ``*``, values and ranges,
    each with an optional ``/step``), or ``None``."""
    for part in text.split(","):
        match = _PART.fullmatch(part)
        if match is None:
            return f"{part!r} is not a value, a range or */step"
        step = match.group("step")
        if step is not None and int(step) == 0:
            return "a step must be at least 1"
        if match.group("range") in ("*", "?"):
            continue
        values = [_value(end, names) for end in match.group("range").split("-")]
        bounds = [value for value in values if value is not None and low <= value <= high]
        if len(bounds) != len(values):
            named = f" or {names[0]}-{names[-1]}" if names else ""
            return f"values must be between {low} and {high}{named}"
        if bounds != sorted(bounds):
            return f"the range {part!r} runs backwards"
    return None


def _value(text: str, names: tuple[str, ...]) -> int | None:
    """A field's value: a number, or a month or day name (``JAN`` is 1, ``SUN`` is 0)."""
    if text.isdigit():
        return int(text)
    upper = text.upper()
    if upper in names:
        return names.index(upper) + (1 if names is _MONTHS else 0)
    return None


def check_timezone(name: str) -> str:
    """``name`` if it is an IANA time zone this machine knows (``UTC``, ``Europe/Paris``),
    else the one-line refusal. Cron times are read in it, daylight saving included."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    zone = check_text(name, "timezone", 64).strip()
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise Refused(
            f"unknown timezone {zone!r}: use an IANA name such as UTC or Europe/Paris"
        ) from error
    return zone
