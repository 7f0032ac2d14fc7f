"""The one exception type for refused operations.

Every operation validates before it writes; a refusal is a :class:`Refused` carrying a
single line that names what was wrong. Front ends print it (CLI: stderr, exit 1) or
return it as a tool error (MCP), so the wording is identical everywhere.

Anything else that escapes an operation (a bug, a store error from a race) is turned
into one line by :func:`unexpected_error_line`, also shared by every front end, so no
user ever has to read a traceback.
"""

import os
import sys
from typing import Literal


class Refused(Exception):
    """An operation refused its input; nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


STORE_RACE = (
    "the store refused the write (another command changed the same record at the same "
    "moment; try again)"
)
"""What a lost race looks like to the user: a unique key taken or a lock held meanwhile."""
_RACE_WORDS = ("locked", "deadlock", "serializ", "could not obtain lock", "busy")
_SHORT = 200


def unexpected_error_line(error: BaseException) -> str:
    """One line for an exception no operation turned into a :class:`Refused`.

    Every front end ends with this instead of a traceback, so a user always gets one line
    to act on: the store's integrity and locking errors (two commands racing for the same
    row) say to try again; anything else is named as an internal error, pointing at
    ``CANOPY_DEBUG=1`` for the traceback. The store's errors are its drivers' own
    (:func:`store_errors`).
    """
    integrity, operational = store_errors("IntegrityError"), store_errors("OperationalError")
    if isinstance(error, integrity + operational):
        reason = _short(str(error))
        race = isinstance(error, integrity) or any(word in reason.lower() for word in _RACE_WORDS)
        if race:
            return f"{STORE_RACE}: {reason}"
        return f"the store could not be used: {reason}"
    return (
        f"internal error: {type(error).__name__}: {_short(str(error))} "
        "(set CANOPY_DEBUG=1 for the traceback)"
    )


StoreErrorKind = Literal["IntegrityError", "OperationalError"]
"""The store's errors that are about the data, not the code: a constraint a write broke
(a unique key taken), or a database that could not do it (locked, unreachable)."""
_STORE_DRIVER_ERRORS = ("sqlite3", "psycopg")
"""The store's drivers (stdlib ``sqlite3``, psycopg), whose errors go by the names of
:data:`StoreErrorKind`."""


def store_errors(kind: StoreErrorKind) -> tuple[type[Exception], ...]:
    """The exception classes of ``kind`` of every store driver this process has loaded:
    looked up, not imported, so catching them loads no driver."""
    drivers = [sys.modules.get(name) for name in _STORE_DRIVER_ERRORS]
    return tuple(getattr(driver, kind) for driver in drivers if driver is not None)


def debug_requested() -> bool:
    """``CANOPY_DEBUG`` is set to something other than empty or ``0``."""
    return os.environ.get("CANOPY_DEBUG", "") not in ("", "0")


def _short(text: str) -> str:
    """``text`` as one line of at most 200 characters."""
    flat = " ".join(text.split()) or "(no message)"
    return flat if len(flat) <= _SHORT else flat[: _SHORT - 1] + "…"
