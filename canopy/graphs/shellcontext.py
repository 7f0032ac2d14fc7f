"""Where a point of a shell script sits, as ``sh``, ``dash`` and ``bash`` would read it.

Command markers render as references to exported variables, never as values, and the
right reference depends on the quoting the marker sits in: ``"${V}"`` in a bare word,
``${V}`` inside ``"…"`` or an unquoted heredoc, ``'"${V}"'`` inside ``'…'``.
:class:`ShellReader` finds that quoting: it is fed exactly the text the shell will see,
references included, so what follows a marker is read as the shell reads it. The reading
is :mod:`canopy.graphs.shellscript` (with :mod:`canopy.graphs.shellgrammar` for what the
words are to their commands); this module answers, from the state reached at a marker,
where it sits.

It also knows where no reference is safe, because there the shell (or a shell it starts)
parses text that the value would become part of: ``eval``/``trap``/``alias``/``let``
arguments, arithmetic, ``${…}`` words, array subscripts, a quoted heredoc, the script of
``sh -c`` outside single quotes, a shell reading its script from stdin. Where dash and
bash read the same text differently, or the script holds something the reader does not
follow, it stops guessing: every later marker is refused
(:class:`~canopy.graphs.shellrefusals.Unsafe`) rather than placed by a guess.

Nested scripts are nested readers (``$(…)``, backquotes, the single-quoted script of
``sh -c``), so a :class:`Place` carries the quoting in the innermost script plus the
layers its reference has to be encoded through.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from canopy.graphs.shellgrammar import Role
from canopy.graphs.shellrefusals import (
    AFTER_BACKSLASH,
    AFTER_CONTROL,
    AFTER_DOLLAR,
    ARITHMETIC,
    BACKQUOTE_IN_QUOTES,
    DELIMITER,
    EVALUATED,
    INTEGER,
    PARAMETER,
    SUBSCRIPT,
    Deferred,
    Shared,
    Unsafe,
    may_be_script,
    quoted_heredoc,
    script_outside_single_quotes,
    variable_name,
)
from canopy.graphs.shellscript import Frame, Kind, Script
from canopy.graphs.shellwords import Command


class Quoting(enum.Enum):
    """The quoting a marker sits in, inside the innermost script that reads it."""

    WORD = "unquoted word"
    DOUBLE = "double quotes"
    SINGLE = "single quotes"
    DOLLAR_SINGLE = "$'…' quotes"
    HEREDOC = "unquoted heredoc body"
    COMMENT = "comment"


class Layer(enum.Enum):
    """A script nested in another one; a reference is encoded for each, inside out."""

    SINGLE_QUOTED_SCRIPT = "the single-quoted script of sh -c"
    BACKQUOTES = "a backquoted command substitution"


@dataclass(frozen=True)
class Place:
    """A marker's quoting and the layers (innermost first) its reference passes through."""

    quoting: Quoting
    layers: tuple[Layer, ...] = ()


_QUOTING = {
    None: Quoting.WORD,
    Kind.DOUBLE: Quoting.DOUBLE,
    Kind.SINGLE: Quoting.SINGLE,
    Kind.DOLLAR_SINGLE: Quoting.DOLLAR_SINGLE,
    Kind.HEREDOC: Quoting.HEREDOC,
    Kind.COMMENT: Quoting.COMMENT,
}
_OPEN_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^\]]*\Z")


class ShellReader:
    """Reads a command as ``sh -c`` would, answering where each marker sits.

    Feed the literal text and, at each marker, ask :meth:`marker`, then feed the reference
    rendered for it; :meth:`signature` before and after tells whether the reference left
    the reading where it found it. :meth:`finish` returns what only the end revealed.
    """

    def __init__(self) -> None:
        self._shared = Shared()
        self._script = Script(self._shared)

    def feed(self, text: str) -> None:
        for char in text:
            self._script.feed(char)

    def marker(self, label: str) -> Place | Unsafe:
        return _place(self._script, label)

    def signature(self) -> tuple[object, ...]:
        return _signature(self._script)

    def finish(self) -> Deferred | None:
        self._script.close()
        return self._shared.deferred


def _place(script: Script, label: str) -> Place | Unsafe:
    """Where a marker at this point of ``script`` sits; registers it for refusals found
    later."""
    script.settle()
    unsafe = _unsafe(script)
    if unsafe is not None:
        return unsafe
    script.labels.append(label)
    top = script.frames[-1] if script.frames else None
    dbracket = script.grammar.dbracket
    if dbracket is not None and script.heredoc_frame() is None:
        dbracket.labels.append(label)
    if top is not None and top.child is not None:
        inner = _place(top.child, label)
        return inner if top.kind is Kind.SUBST else _wrap(inner, Layer.BACKQUOTES)
    if script.word is not None and script.word.script is not None:
        return _wrap(_place(script.word.script, label), Layer.SINGLE_QUOTED_SCRIPT)
    return Place(_QUOTING[top.kind if top is not None else None])


def _signature(script: Script) -> tuple[object, ...]:
    """The quoting state, nested scripts included: a reference must leave it as is."""
    top = script.frames[-1] if script.frames else None
    inner: tuple[object, ...] = ()
    if top is not None and top.child is not None:
        inner = _signature(top.child)
    elif script.word is not None and script.word.script is not None:
        inner = _signature(script.word.script)
    flags = (script.escape, script.backslash, script.dollar, script.dollar_paren, script.paren)
    return (tuple(frame.kind for frame in script.frames), flags, script.operator, inner)


def _unsafe(script: Script) -> Unsafe | None:
    """Why nothing can be placed here, checking this script's own level."""
    if script.shared.unreadable is not None:
        return script.shared.unreadable
    if script.escape or script.backslash:
        return AFTER_BACKSLASH
    if script.dollar:
        return AFTER_DOLLAR
    for frame in script.frames:
        unsafe = _frame_unsafe(frame)
        if unsafe is not None:
            return unsafe
    if script.frames and script.frames[0].kind in (Kind.HEREDOC, Kind.COMMENT):
        return None
    return _command_unsafe(script.grammar.command) or _word_unsafe(script)


def _command_unsafe(command: Command) -> Unsafe | None:
    """Commands that evaluate their arguments as code make every marker in them unsafe."""
    name = command.evaluator()
    if name is None:
        return None
    return EVALUATED.get(name, INTEGER)


def _word_unsafe(script: Script) -> Unsafe | None:
    word = script.word
    command = script.grammar.command
    role = word.role if word is not None else script.grammar.next_role
    if role is Role.DELIMITER:
        return DELIMITER
    namer = command.takes_a_name() if role is Role.ARG else None
    if namer is not None and (word is None or "=" not in word.raw):
        return variable_name(namer)
    if word is None:
        verdict = command.script_next() if role is Role.ARG else (False, "")
        if verdict[0] is None:
            return may_be_script(verdict[1])
        return script_outside_single_quotes(verdict[1]) if verdict[0] else None
    if _OPEN_SUBSCRIPT.match("".join(word.raw)):
        return SUBSCRIPT
    if word.unknown is not None:
        return word.unknown
    top = script.frames[-1].kind if script.frames else None
    if word.script is not None and top is not Kind.SINGLE:
        return script_outside_single_quotes(word.shell)
    return None


def _frame_unsafe(frame: Frame) -> Unsafe | None:
    """What an open construct rules out for every marker inside it, nested ones included."""
    if frame.kind is Kind.PARAM:
        return PARAMETER
    if frame.kind is Kind.ARITH:
        return ARITHMETIC
    if frame.kind is Kind.BACKQUOTE and frame.child is None:
        return BACKQUOTE_IN_QUOTES
    if frame.kind is Kind.DOLLAR_SINGLE and frame.control:
        return AFTER_CONTROL
    if frame.heredoc is not None and frame.heredoc.quoted:
        return quoted_heredoc(frame.heredoc.source)
    return None


def _wrap(place: Place | Unsafe, layer: Layer) -> Place | Unsafe:
    if isinstance(place, Unsafe):
        return place
    return Place(place.quoting, (*place.layers, layer))
