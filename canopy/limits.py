"""What Canopy accepts: every numeric range, size limit and name rule, in one place.

Unchecked input does not fail where it is entered but later and elsewhere, where nobody
can fix it: ``"timeout_minutes": 1e308`` used to be stored and then overflowed
``timedelta`` in every workflow task of the run; a node named ``x/../../tmp/y`` became
part of a log path; an escape sequence in a name reached the terminal of whoever listed
it. So every front door (graph create/edit, spec and queue writes, sessions, CLI options,
MCP arguments) checks with the functions here before anything is written, and a problem
is one :class:`~canopy.errors.Refused` line naming the field, the value and the rule.
docs/configuration.md ("Limits") lists every constant.

The checks come in two layers. ``*_problem`` functions return what is wrong (or
``None``) without naming the subject, so the pydantic graph model can put its field path
in front; ``clean_*``/``check_*`` functions wrap them for the operations and raise
:class:`Refused` with the subject named.

Stdlib only and cheap to import: every CLI command imports this (through
:mod:`canopy.workdir`, and every command checks its arguments with it). So no dataclass
or NamedTuple, and patterns are strings compiled on first use (``re`` caches them),
behind fast paths.
"""

from __future__ import annotations

import math
import re
import sys

from canopy.errors import Refused

# --------------------------------------------------------------------------- numbers


class Range:
    """An inclusive range of accepted numbers, with the unit used to describe it.

    ``note`` is a human reading of ``high`` (``7 days``), shown in refusals.
    """

    __slots__ = ("high", "low", "note", "unit")

    def __init__(self, low: float, high: float, unit: str = "", note: str = "") -> None:
        self.low, self.high, self.unit, self.note = low, high, unit, note

    def describe(self) -> str:
        """``between 1 and 10080 minutes (7 days)``."""
        unit = f" {self.unit}" if self.unit else ""
        note = f" ({self.note})" if self.note else ""
        return f"between {_shown(self.low)} and {_shown(self.high)}{unit}{note}"


NODE_TIMEOUT_MINUTES = Range(1, 10_080, "minutes", "7 days")
"""A node's ``timeout_minutes``. The workflow adds it to a ``timedelta``; above about
1.5e13 minutes that overflows and wedges every run of the graph."""
STALL_MINUTES = Range(0, 10_080, "minutes", "7 days")
"""An agent node's ``stall_minutes`` (and the config file's default): how long its agent
may print nothing before it is killed; 0 turns the check off."""
DEFAULT_STALL_MINUTES = 60
"""``stall_minutes`` of an agent node that does not set it, unless the config file does."""
HOOK_TIMEOUT_MINUTES = Range(1, 10_080, "minutes", "7 days")
"""An agent hook's ``timeout_minutes``."""
MAX_VISITS = Range(1, 1_000)
"""A node's ``max_visits``: how often it may run for one spec."""
DEFAULT_MAX_VISITS = 5
"""``max_visits`` of a node that does not set it."""
WAIT_SECONDS = Range(0, 604_800, "seconds", "7 days")
"""``canopy graph wait --timeout`` and ``canopy session send --wait``."""
HEARTBEAT_TIMEOUT_SECONDS = Range(1, 3_600, "seconds", "1 hour")
"""``CANOPY_HEARTBEAT_TIMEOUT``: how long a node may go silent before its attempt is
retried (a retry adopts the running process, so this only bounds how soon)."""
LANES = Range(1, 16)
"""A graph's ``lanes`` (and ``graph run --lanes``): how many specs a run works on at
once, each in a worktree of its own and with an agent process; past 16 the machine, not
the queue, sets the pace (docs/lanes.md)."""
SPECS_PER_EXECUTION = Range(1, 10_000)
"""``CANOPY_SPECS_PER_EXECUTION``: specs a run drains before it continues as new."""
NOTIFICATIONS_LIMIT = Range(1, 10_000)
"""How many notifications one listing may ask for (``--limit``, MCP ``limit``)."""
LOG_LINES_LIMIT = Range(1, 10_000)
"""How many rendered lines of a graph run's logs MCP ``graph`` ``logs`` may answer
(``limit``): a whole answer an agent reads at once."""
BUDGET_USD = Range(0.01, 1_000_000, "USD")
"""A graph's ``budget`` in USD, per run or per spec (``usd``)."""
BUDGET_TOKENS = Range(1, 10**12, "tokens")
"""A graph's ``budget`` in tokens, per run or per spec (``tokens``)."""
USAGE_SINCE_DAYS = Range(0, 36_500, "days", "100 years")
"""How far back ``canopy usage --since`` (and MCP ``since``) may reach; further back
than a ``datetime`` goes would overflow."""
SPEC_LIST_LIMIT = Range(1, 1_000_000_000)
"""How many specs ``spec list --limit`` may ask for (SQLite binds 64-bit integers only)."""

# --------------------------------------------------------------------------- sizes

NAME_MAX_LENGTH = 400
"""Spec, queue and graph names (characters; the store's column width)."""
NODE_NAME_MAX_LENGTH = 200
"""Node names (the width of ``node_runs.node``)."""
ENSEMBLE_NAME_MAX_LENGTH = 200
GROUP_MAX_LENGTH = 200
"""Context group labels of queue members."""
SESSION_NAME_MAX_LENGTH = 200
"""Session names, hooks' ``target_session_name`` and harness conversation ids."""
ID_MAX_LENGTH = 64
"""Ids a user may type in full, such as a hook's ``target_session_id``."""
WORKDIR_MAX_LENGTH = 4096
"""Workdirs, as absolute paths."""
HOST_MAX_LENGTH = 255
"""Host names (``CANOPY_HOST``, a graph's or run's host): the width of the store's host
columns (``sessions.host``, ``graphs.host``, ``node_runs.host``)."""
TEXT_MAX_LENGTH = 200_000
"""Prompts and commands: node and hook fields, and a session message's prompt."""
SPEC_BODY_MAX_BYTES = 1 << 20
"""A spec body, in UTF-8 bytes (1 MiB)."""
GRAPH_FILE_MAX_BYTES = 1 << 20
"""A graph definition file or stdin, in bytes (1 MiB)."""
NESTING_MAX_DEPTH = 64
"""Arrays and objects inside each other in a graph definition (a real one needs 4)."""


_SHOWN_DIGITS = 24


def _shown(value: float) -> str:
    """``value`` for a refusal: short even for an integer with thousands of digits."""
    if isinstance(value, int):
        try:
            digits = str(value)
        except ValueError:  # beyond what Python converts (sys.set_int_max_str_digits)
            return f"a number with more than {sys.get_int_max_str_digits()} digits"
        length = len(digits.lstrip("-"))
        return digits if length <= _SHOWN_DIGITS else f"a {length}-digit number"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def range_problem(value: float, bounds: Range) -> str | None:
    """Why ``value`` is not in ``bounds`` (NaN and infinities never are), or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{_shown(value)} is not a finite number; it must be {bounds.describe()}"
    if not bounds.low <= value <= bounds.high:
        return f"{_shown(value)} is out of range; it must be {bounds.describe()}"
    return None


def check_range(value: float, bounds: Range, what: str) -> float:
    """``value`` unchanged, or :class:`Refused` ``<what>: <value> is out of range; …``."""
    problem = range_problem(value, bounds)
    if problem is not None:
        raise Refused(f"{what}: {problem}")
    return value


# --------------------------------------------------------------------------- text

_NUL_OR_SURROGATE = "[\x00\ud800-\udfff]"
_LINE_BREAK = "[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"
"""Everything :meth:`str.splitlines` splits on: a name holding one is several lines."""
_CONTROL = "[\x00-\x1f\x7f-\x9f]"
"""C0 (NUL, ESC, …), DEL and C1: terminals act on them instead of showing them."""
_PATH_UNSAFE = r"^\W|[^\w .-]"
"""A first character that is not a letter, digit or ``_``, or a later one that is not
that, ``-``, ``.`` or a space: so never ``/``, ``\\``, ``.``, ``..`` or a leading ``-``."""
_SURROGATE_ESCAPE = range(0xDC80, 0xDD00)
"""Where Python puts a byte that is not UTF-8 (``surrogateescape``: argv, environ)."""

PATH_SAFE_RULE = (
    "letters, digits, '_', '-', '.' and spaces only, starting with a letter, digit or '_'"
)
"""The rule for names that may become part of a file name, as refusals state it."""


def offset_of(text: str, index: int) -> int:
    """The UTF-8 byte offset of ``text[index]``: where a byte-level tool would point."""
    return len(text[:index].encode("utf-8", "surrogatepass"))


def _character(char: str) -> str:
    """A character as an escape people can read (``\\x1b``, ``\\u2028``)."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text_problem(text: str, max_length: int | None = None) -> str | None:
    """Why ``text`` cannot be stored as free text (a body, a prompt, an argument), or None.

    NUL ends a C string (subprocess arguments, Postgres text) and a lone surrogate cannot
    be encoded as UTF-8, so both fail far from where they came in. A surrogate from the
    ``surrogateescape`` range is a byte that was not UTF-8, and is reported as that byte.
    """
    found = None if text.isascii() and "\x00" not in text else re.search(_NUL_OR_SURROGATE, text)
    if found is not None:
        char, at = found.group(), offset_of(text, found.start())
        if char == "\x00":
            return f"contains a NUL character (offset {at})"
        if ord(char) in _SURROGATE_ESCAPE:
            return f"not valid UTF-8 (byte 0x{ord(char) - 0xDC00:02x} at offset {at})"
        return f"contains a lone surrogate (U+{ord(char):04X} at offset {at})"
    if max_length is not None and len(text) > max_length:
        return f"must be at most {max_length} characters (this one has {len(text)})"
    return None


def check_text(text: str, what: str, max_length: int | None = None) -> str:
    """``text`` unchanged, or :class:`Refused` ``<what>: <problem>``."""
    problem = text_problem(text, max_length)
    if problem is not None:
        raise Refused(f"{what}: {problem}")
    return text


def name_problem(name: str, max_length: int | None, path_safe: bool = False) -> str | None:
    """Why ``name`` (as given, before stripping) is not a valid name, or ``None``.

    Names are shown in tables, refusals and terminal titles, so they are one line with no
    control characters; ``path_safe`` names may also become part of a file name, so they
    keep to :data:`PATH_SAFE_RULE` (no ``/``, ``\\``, ``..`` or leading ``-``). No
    ``max_length`` means the caller measures the length itself.
    """
    if re.search(_LINE_BREAK, name):
        return "must be a single line"
    control = re.search(_CONTROL, name)
    if control is not None:
        char, at = control.group(), offset_of(name, control.start())
        return f"must not contain control characters ({_character(char)} at offset {at})"
    problem = text_problem(name)
    if problem is not None:
        return problem
    cleaned = name.strip()
    if not cleaned:
        return "must not be empty"
    if max_length is not None and len(cleaned) > max_length:
        return f"must be at most {max_length} characters (this one has {len(cleaned)})"
    unsafe = re.search(_PATH_UNSAFE, cleaned) if path_safe else None
    if unsafe is not None:
        at = offset_of(cleaned, unsafe.start())
        return f"may use {PATH_SAFE_RULE} (found {unsafe.group()!r} at offset {at})"
    return None


def clean_name(name: str, what: str, max_length: int = NAME_MAX_LENGTH) -> str:
    """``name`` stripped of surrounding spaces, or :class:`Refused` ``<what> <problem>``."""
    problem = name_problem(name, max_length)
    if problem is not None:
        raise Refused(f"{what} {problem}")
    return name.strip()


def clean_path_safe_name(name: str, what: str, max_length: int) -> str:
    """:func:`clean_name` for names that may become part of a file name."""
    problem = name_problem(name, max_length, path_safe=True)
    if problem is not None:
        raise Refused(f"{what} {problem}")
    return name.strip()


# --------------------------------------------------------------------------- structure


def decode_utf8(data: bytes, what: str) -> str:
    """``data`` as text, or :class:`Refused` naming the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(
            f"{what}: not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def nesting_problem(data: object, max_depth: int = NESTING_MAX_DEPTH) -> str | None:
    """Why ``data`` (parsed JSON or TOML) nests too deeply, or ``None``.

    Iterative, so it cannot itself hit the recursion limit it protects the rest from.
    """
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = (
            value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > max_depth:
                    return f"nested deeper than {max_depth} levels"
                stack.append((child, depth + 1))
    return None
