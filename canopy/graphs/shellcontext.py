"""Where a point of a shell script sits, as ``sh``, ``dash`` and ``bash`` would read it.

Command markers render as references to exported variables, never as values, and the
right reference depends on the quoting the marker sits in: ``"${V}"`` in a bare word,
``${V}`` inside ``"…"`` or an unquoted heredoc, ``'"${V}"'`` inside ``'…'``. This module
is the reader that finds that quoting: a character-at-a-time state machine over POSIX sh
syntax (plus bash's ``$'…'``, ``$"…"``, ``[[``, ``((``, ``<(…)``), fed exactly the text the
shell will see, references included, so what follows a marker is read as the shell reads
it.

It also knows where no reference is safe, because there the shell (or a shell it starts)
parses text that the value would become part of: ``eval``/``trap``/``alias``/``let``
arguments, arithmetic, ``${…}`` words, array subscripts, a quoted heredoc, the script of
``sh -c`` outside single quotes, a shell reading its script from stdin. Where dash and
bash read the same text differently, or the script holds something this reader does not
follow, it stops guessing: every later marker is refused (:class:`Unsafe`) rather than
placed by a guess.

Nested scripts are nested readers: ``$(…)``, backquotes, and the single-quoted script of
``sh -c`` each get their own, fed the characters that shell will parse (backquotes and
``sh -c`` decode their escapes first). A :class:`Place` therefore carries the quoting in
the innermost script plus the layers its reference has to be encoded through.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from canopy.graphs.shellwords import UNKNOWN_COMMAND, Command, Word


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


@dataclass(frozen=True)
class Unsafe:
    """Why no reference is safe at a point, and what to write instead (``{var}``: the
    environment variable's name)."""

    reason: str
    hint: str


@dataclass(frozen=True)
class Deferred:
    """An :class:`Unsafe` that only the rest of the script revealed, for marker ``label``."""

    label: str
    unsafe: Unsafe


class _Kind(enum.Enum):
    SINGLE = enum.auto()
    DOLLAR_SINGLE = enum.auto()
    DOUBLE = enum.auto()
    PARAM = enum.auto()
    ARITH = enum.auto()
    SUBST = enum.auto()
    BACKQUOTE = enum.auto()
    HEREDOC = enum.auto()
    COMMENT = enum.auto()


class _Role(enum.Enum):
    """What a word is to its command."""

    ARG = enum.auto()
    REDIRECT = enum.auto()
    DELIMITER = enum.auto()


_QUOTING = {
    None: Quoting.WORD,
    _Kind.DOUBLE: Quoting.DOUBLE,
    _Kind.SINGLE: Quoting.SINGLE,
    _Kind.DOLLAR_SINGLE: Quoting.DOLLAR_SINGLE,
    _Kind.HEREDOC: Quoting.HEREDOC,
    _Kind.COMMENT: Quoting.COMMENT,
}
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_OPERATORS = frozenset(
    {";", ";;", ";&", ";;&", "&", "&&", "&>", "&>>", "|", "||", "|&"}
    | {"<", "<<", "<<-", "<<<", "<&", "<>", "<(", ">", ">>", ">&", ">|", ">("}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SPECIAL_PARAMETERS = frozenset("$#?!-@*0123456789")
_OPEN_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^\]]*\Z")

_VAR = "{var}"
_EVALUATED_HINT = f"refer to {_VAR} (double-quoted) inside the evaluated text instead"
_EVALUATED = {
    "eval": Unsafe("is an argument of eval, which runs its arguments as code", _EVALUATED_HINT),
    "trap": Unsafe("is part of a trap action, which the shell runs as code", _EVALUATED_HINT),
    "alias": Unsafe("is part of an alias, which the shell expands as code", _EVALUATED_HINT),
    "let": Unsafe(
        "is an argument of let, which bash evaluates as arithmetic that can run code",
        f"check that {_VAR} is a number in a script first",
    ),
    UNKNOWN_COMMAND: Unsafe(
        "is an argument of a command only known at run time, which may be eval or a shell",
        f"name the command literally, or use {_VAR}",
    ),
}
_ARITHMETIC = Unsafe(
    "sits inside arithmetic ($((…)), ((…)) or $[…]), where bash evaluates the value as an "
    "expression that can run code",
    f"check that {_VAR} is a number in a script first",
)
_PARAMETER = Unsafe(
    "sits inside a parameter expansion (${…}), whose words are patterns, defaults or subscripts",
    f"use {_VAR} in a word of its own",
)
_BACKQUOTE_IN_QUOTES = Unsafe(
    "sits in backquotes inside double quotes, a heredoc or ${…}, whose escaping shells do "
    "not agree on",
    "use $(…) instead of backquotes",
)
_SUBSCRIPT = Unsafe(
    "sits in an array subscript (name[…]), which bash evaluates as arithmetic that can run code",
    f"use {_VAR} as a value, not a subscript",
)
_DELIMITER = Unsafe(
    "is part of a heredoc delimiter (<<…), which is never expanded",
    "use a fixed delimiter word",
)
_AFTER_BACKSLASH = Unsafe(
    "directly follows a backslash, which would quote the first character of its reference",
    "remove the backslash",
)
_AFTER_DOLLAR = Unsafe(
    "directly follows a $, which would turn its reference into another expansion",
    f"separate them, or write {_VAR}",
)
_AFTER_CONTROL = Unsafe(
    "directly follows \\c in $'…', which swallows the next character",
    "remove the \\c",
)
_INTEGER = Unsafe(
    "is assigned by a command declaring integer variables (-i), whose values bash evaluates "
    "as arithmetic that can run code",
    f"declare the variable without -i, or check that {_VAR} is a number first",
)
_DBRACKET = Unsafe(
    "sits in a bash [[ … ]] test with an arithmetic comparison (-eq, -lt, …), which "
    "evaluates the value as arithmetic that can run code",
    "compare numbers with [ … ], which does not evaluate them",
)
CHANGED = Unsafe(
    "could not be rendered without changing how the rest of the command is read",
    f"use {_VAR}",
)


def _quoted_heredoc(source: str) -> Unsafe:
    return Unsafe(
        f"sits inside a quoted heredoc ({source}), where no value can be expanded",
        f"use an unquoted heredoc or {_VAR}",
    )


def _script_outside_single_quotes(shell: str) -> Unsafe:
    return Unsafe(
        f"sits in the script of {shell} -c outside single quotes, where the outer shell "
        "would paste the value into the script the inner shell runs",
        f"single-quote the script: {shell} -c '… {{marker}} …'",
    )


def _script_unknown(shell: str, what: str) -> Unsafe:
    return Unsafe(
        f"sits in the script of {shell} -c after {what}, so the script the inner shell "
        "reads is only known at run time",
        "single-quote the whole script",
    )


def _variable_name(command: str) -> Unsafe:
    return Unsafe(
        f"is read as a variable name by {command}, and bash evaluates a subscript in a "
        "name (a[…]) as arithmetic that can run code",
        f"name the variable literally and pass {_VAR} as its value",
    )


def _may_be_script(shell: str) -> Unsafe:
    return Unsafe(
        f"is an argument of {shell}, whose earlier words are only known at run time, so "
        "it may be the script of a -c",
        f"write the options literally, or use {_VAR} inside a script",
    )


_ALIASES = Unsafe(
    "is in a script that defines aliases, which can turn any later word into eval",
    f"use a function, or {_VAR}",
)


def _whole_script_unsafe(command: Command) -> Unsafe | None:
    """What a command rules out for every marker of its script, before or after it."""
    reader = command.script_reader()
    if reader == UNKNOWN_COMMAND:
        return Unsafe(
            f'is in a script that also runs {reader} (a name such as "$cmd" or a marker), '
            "which may be eval or a shell reading its script from stdin",
            f"name the command literally, or use {_VAR}",
        )
    if reader:
        return Unsafe(
            f"is in a script that also runs {reader} on a script it does not spell out (from "
            "stdin, a substitution or xargs), which could run the value as code",
            f"let that script read {_VAR} from its environment",
        )
    return _ALIASES if command.evaluator() == "alias" else None


def _unreadable(construct: str) -> Unsafe:
    return Unsafe(
        f"follows {construct}, which shells do not all read the same way, so where the "
        "value would land cannot be told",
        f"simplify the command, or use {_VAR}",
    )


@dataclass
class _Shared:
    """What every reader of one command shares: the first unreadable construct and the
    first refusal that the rest of the script revealed."""

    unreadable: Unsafe | None = None
    deferred: Deferred | None = None

    def defer(self, label: str, unsafe: Unsafe) -> None:
        if self.deferred is None:
            self.deferred = Deferred(label, unsafe)


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    source: str
    line: list[str] = field(default_factory=list)


@dataclass(eq=False)
class _Frame:
    """A quoting construct open in a script; nested scripts hang off ``child``."""

    kind: _Kind
    child: _Script | None = None
    closer: str = ""
    depth: int = 0
    closing: bool = False
    in_quotes: bool = False
    control: bool = False
    heredoc: _Heredoc | None = None


@dataclass(eq=False)
class _Word:
    """The word being read at script level, with the script it is for ``sh -c``."""

    role: _Role
    raw: list[str]
    value: list[str] = field(default_factory=list)
    static: bool = True
    quoted: bool = False
    generated: bool = False
    tail: list[str] = field(default_factory=list)
    shell: str = ""
    script: _Script | None = None
    unknown: Unsafe | None = None


@dataclass
class _DBracket:
    arithmetic: bool = False
    labels: list[str] = field(default_factory=list)


class _Script:
    """One script being read: the top level, a ``$(…)``, backquotes or a ``sh -c`` script."""

    def __init__(self, shared: _Shared, substitution: bool = False) -> None:
        self.shared = shared
        self.substitution = substitution
        self.closed = False
        self.frames: list[_Frame] = []
        self.escape = False
        self.backslash = False
        self.dollar = False
        self.dollar_paren = False
        self.paren = False
        self.operator = ""
        self.word: _Word | None = None
        self.next_role = _Role.ARG
        self.delimiter_operator = ""
        self.command = Command()
        self.heredocs: list[_Heredoc] = []
        self.paren_depth = 0
        self.case_depth = 0
        self.dbracket: _DBracket | None = None
        self.labels: list[str] = []
        self.whole: Unsafe | None = None

    # ------------------------------------------------------------------ markers

    def marker(self, label: str) -> Place | Unsafe:
        """Where a marker at this point sits; registers it for refusals found later."""
        self._settle()
        unsafe = self._unsafe()
        if unsafe is not None:
            return unsafe
        self.labels.append(label)
        top = self.frames[-1] if self.frames else None
        if self.dbracket is not None and self._heredoc_frame() is None:
            self.dbracket.labels.append(label)
        if top is not None and top.child is not None:
            inner = top.child.marker(label)
            return inner if top.kind is _Kind.SUBST else _wrap(inner, Layer.BACKQUOTES)
        if self.word is not None and self.word.script is not None:
            return _wrap(self.word.script.marker(label), Layer.SINGLE_QUOTED_SCRIPT)
        return Place(_QUOTING[top.kind if top is not None else None])

    def signature(self) -> tuple[object, ...]:
        """The quoting state, nested scripts included: a reference must leave it as is."""
        top = self.frames[-1] if self.frames else None
        inner: tuple[object, ...] = ()
        if top is not None and top.child is not None:
            inner = top.child.signature()
        elif self.word is not None and self.word.script is not None:
            inner = self.word.script.signature()
        flags = (self.escape, self.backslash, self.dollar, self.dollar_paren, self.paren)
        return (tuple(frame.kind for frame in self.frames), flags, self.operator, inner)

    def close(self) -> None:
        """End of this script: refusals that needed the whole of it are decided now."""
        for frame in self.frames:
            if frame.child is not None:
                self._close_child(frame.child)
        self._settle()
        self._end_command()
        if self.dbracket is not None and self.dbracket.labels:
            self.shared.defer(self.dbracket.labels[0], _DBRACKET)
        if self.whole is not None and self.labels:
            self.shared.defer(self.labels[0], self.whole)

    def _close_child(self, child: _Script) -> None:
        """A nested script shares this one's stdin: a shell it runs on stdin is this
        script's concern too (``sh -c 'sh' <<EOF``)."""
        child.close()
        if self.whole is None:
            self.whole = child.whole

    def _unsafe(self) -> Unsafe | None:
        """Why nothing can be placed here, checking this script's own level."""
        if self.shared.unreadable is not None:
            return self.shared.unreadable
        if self.escape or self.backslash:
            return _AFTER_BACKSLASH
        if self.dollar:
            return _AFTER_DOLLAR
        for frame in self.frames:
            unsafe = _frame_unsafe(frame)
            if unsafe is not None:
                return unsafe
        if self.frames and self.frames[0].kind in (_Kind.HEREDOC, _Kind.COMMENT):
            return None
        return self._command_unsafe() or self._word_unsafe()

    def _command_unsafe(self) -> Unsafe | None:
        """Commands that evaluate their arguments as code make every marker in them unsafe."""
        name = self.command.evaluator()
        if name is None:
            return None
        return _EVALUATED.get(name, _INTEGER)

    def _word_unsafe(self) -> Unsafe | None:
        word = self.word
        role = word.role if word is not None else self.next_role
        if role is _Role.DELIMITER:
            return _DELIMITER
        namer = self.command.takes_a_name() if role is _Role.ARG else None
        if namer is not None and (word is None or "=" not in word.raw):
            return _variable_name(namer)
        if word is None:
            verdict = self.command.script_next() if role is _Role.ARG else (False, "")
            if verdict[0] is None:
                return _may_be_script(verdict[1])
            return _script_outside_single_quotes(verdict[1]) if verdict[0] else None
        if _OPEN_SUBSCRIPT.match("".join(word.raw)):
            return _SUBSCRIPT
        if word.unknown is not None:
            return word.unknown
        top = self.frames[-1].kind if self.frames else None
        if word.script is not None and top is not _Kind.SINGLE:
            return _script_outside_single_quotes(word.shell)
        return None

    # ------------------------------------------------------------------ reading

    def feed(self, char: str) -> None:
        """Read one more character of the script.

        A backslash-newline is a line continuation wherever a backslash escapes: the
        shell removes both before reading on, so ``&\\⏎&`` is ``&&``; it is held until
        the next character tells.
        """
        if self.backslash:
            self.backslash = False
            if char == "\n":
                return
            self._read("\\")
        if char == "\\" and self._continues_lines():
            self.backslash = True
            return
        self._read(char)

    def _continues_lines(self) -> bool:
        top = self.frames[-1] if self.frames else None
        if top is None or top.kind in (_Kind.DOUBLE, _Kind.PARAM, _Kind.ARITH):
            return not self.escape
        return top.heredoc is not None and not top.heredoc.quoted and not self.escape

    def _read(self, char: str) -> None:
        heredoc = self._heredoc_frame()
        if heredoc is not None and self._ends_heredoc(heredoc, char):
            return
        word = self.word
        self._consume(char)
        if word is not None and self.word is word:
            word.raw.append(char)

    def _consume(self, char: str) -> None:
        if self.escape:
            self.escape = False
            self._escaped(char)
            return
        if self.dollar:
            self.dollar = False
            if self._after_dollar(char):
                return
        if self.dollar_paren:
            self.dollar_paren = False
            if char == "(":
                self.frames.append(_Frame(_Kind.ARITH, closer=")"))
                return
            self._push_substitution()
        if self.paren:
            self.paren = False
            if char == "(":
                self.frames.append(_Frame(_Kind.ARITH, closer=")"))
                return
            self._open_subshell()
        if self.operator:
            if any(op.startswith(self.operator + char) for op in _OPERATORS):
                self._extend_operator(char)
                return
            self._finish_operator()
        self._dispatch(char)

    def _settle(self) -> None:
        """Resolve what waits for a next character that no reference could continue."""
        if self.operator:
            self._finish_operator()
        if self.paren:
            self.paren = False
            self._open_subshell()
        if self.dollar_paren:
            self.dollar_paren = False
            self._push_substitution()

    def _dispatch(self, char: str) -> None:
        top = self.frames[-1] if self.frames else None
        if top is None:
            self._plain(char)
        elif top.kind is _Kind.SINGLE:
            self._in_single(char)
        elif top.kind is _Kind.DOLLAR_SINGLE:
            self._in_dollar_single(char, top)
        elif top.kind is _Kind.DOUBLE:
            self._in_double(char)
        elif top.kind is _Kind.PARAM:
            self._in_param(char, top)
        elif top.kind is _Kind.ARITH:
            self._in_arith(char, top)
        elif top.kind is _Kind.SUBST:
            self._in_substitution(char, top)
        elif top.kind is _Kind.BACKQUOTE:
            self._in_backquote(char, top)
        elif top.kind is _Kind.HEREDOC:
            self._in_heredoc(char, top)
        else:
            self._in_comment(char)

    def _plain(self, char: str) -> None:
        """A character at script level, outside any quoting."""
        if char in " \t":
            self._end_word()
        elif char == "\n":
            self._end_command()
            self._start_heredoc()
        elif char in ";&|<>":
            self._start_operator(char)
        elif char == "(":
            self._open_paren()
        elif char == ")":
            self._close_paren()
        elif char == "#" and self.word is None:
            self.frames.append(_Frame(_Kind.COMMENT))
        else:
            self._word_start(char)
            self._word_syntax(char)

    def _word_syntax(self, char: str) -> None:
        """A character that starts or continues a word at script level."""
        word = self.word
        assert word is not None
        if char == "'":
            word.quoted = True
            self.frames.append(_Frame(_Kind.SINGLE))
        elif char == '"':
            word.quoted = True
            self.frames.append(_Frame(_Kind.DOUBLE))
        elif char == "\\":
            word.quoted = True
            self.escape = True
        elif char == "$":
            self._dynamic("an expansion ($…)")
            self.dollar = True
        elif char == "`":
            self._dynamic("a command substitution")
            word.generated = True
            self.frames.append(_Frame(_Kind.BACKQUOTE, child=_Script(self.shared)))
        elif char in "*?[{}" or (char == "~" and not word.value):
            self._word_char(char, pattern=True)
        else:
            self._word_char(char)

    def _escaped(self, char: str) -> None:
        """The character after a backslash, read as the innermost quoting reads it."""
        top = self.frames[-1] if self.frames else None
        if top is None:
            self._word_char(char)
        elif top.kind is _Kind.DOUBLE:
            if char not in '$`"\\':
                self._word_char("\\")
            self._word_char(char)
        elif top.kind is _Kind.DOLLAR_SINGLE:
            top.control = char == "c"
        elif top.kind is _Kind.BACKQUOTE and top.child is not None:
            if char not in "$`\\":
                top.child.feed("\\")
            top.child.feed(char)

    def _after_dollar(self, char: str) -> bool:
        """The character after a ``$``; True when it belongs to the expansion."""
        top = self.frames[-1] if self.frames else None
        plain = top is None or (top.kind is _Kind.PARAM and not top.in_quotes)
        if char == "{":
            self.frames.append(_Frame(_Kind.PARAM, in_quotes=self._in_quotes()))
        elif char == "(":
            self.dollar_paren = True
        elif char == "[":
            self.frames.append(_Frame(_Kind.ARITH, closer="]"))
        elif char == "'" and plain:
            self.frames.append(_Frame(_Kind.DOLLAR_SINGLE))
        elif char == '"' and top is None:
            self.frames.append(_Frame(_Kind.DOUBLE))
        else:
            return char in _SPECIAL_PARAMETERS
        return True

    def _in_quotes(self) -> bool:
        return any(f.kind in (_Kind.DOUBLE, _Kind.HEREDOC) or f.in_quotes for f in self.frames)

    def _in_single(self, char: str) -> None:
        if char == "'":
            self.frames.pop()
        else:
            self._word_char(char)

    def _in_dollar_single(self, char: str, frame: _Frame) -> None:
        if frame.control:
            frame.control = False
        elif char == "\\":
            self.escape = True
        elif char == "'":
            self.frames.pop()

    def _in_double(self, char: str) -> None:
        if char == '"':
            self.frames.pop()
        elif char == "\\":
            self.escape = True
        elif char == "$":
            self._dynamic("an expansion ($…)")
            self.dollar = True
        elif char == "`":
            self._dynamic("a command substitution")
            if self.word is not None:
                self.word.generated = True
            self.frames.append(_Frame(_Kind.BACKQUOTE, in_quotes=True))
        else:
            self._word_char(char)

    def _in_param(self, char: str, frame: _Frame) -> None:
        if char == "}":
            self.frames.pop()
        elif char == "\\":
            self.escape = True
        elif char == "$":
            self.dollar = True
        elif char == "`":
            self.frames.append(_Frame(_Kind.BACKQUOTE, in_quotes=True))
        elif char == '"':
            self.frames.append(_Frame(_Kind.DOUBLE))
        elif char == "'" and not frame.in_quotes:
            self.frames.append(_Frame(_Kind.SINGLE))
        elif char in "'{":
            self._unreadable(f"{char} inside ${{…}}")

    def _in_arith(self, char: str, frame: _Frame) -> None:
        if frame.closing:
            frame.closing = False
            if char == ")":
                self.frames.pop()
                return
            self._unreadable("$(( or (( that does not end in ))")
        opener = "(" if frame.closer == ")" else "["
        if char == opener:
            frame.depth += 1
        elif char == frame.closer:
            if frame.depth:
                frame.depth -= 1
            elif frame.closer == "]":
                self.frames.pop()
            else:
                frame.closing = True
        elif char == "\\":
            self.escape = True
        elif char == "$":
            self.dollar = True
        elif char == "`":
            self.frames.append(_Frame(_Kind.BACKQUOTE, in_quotes=True))
        elif char == '"':
            self.frames.append(_Frame(_Kind.DOUBLE))
        elif char == "'":
            self._unreadable("a single quote inside arithmetic")

    def _in_substitution(self, char: str, frame: _Frame) -> None:
        child = frame.child
        assert child is not None
        child.feed(char)
        if child.closed:
            self.frames.pop()
            self._close_child(child)

    def _in_backquote(self, char: str, frame: _Frame) -> None:
        if char == "`":
            self.frames.pop()
            if frame.child is not None:
                self._close_child(frame.child)
        elif char == "\\":
            self.escape = True
        elif frame.child is not None:
            frame.child.feed(char)

    def _in_heredoc(self, char: str, frame: _Frame) -> None:
        heredoc = frame.heredoc
        assert heredoc is not None
        if heredoc.quoted:
            return
        if char == "\\":
            self.escape = True
        elif char == "$":
            self.dollar = True
        elif char == "`":
            self.frames.append(_Frame(_Kind.BACKQUOTE, in_quotes=True))

    def _in_comment(self, char: str) -> None:
        if char == "\n":
            self.frames.pop()
            self._plain(char)

    # ------------------------------------------------------------------ heredocs

    def _heredoc_frame(self) -> _Frame | None:
        if self.frames and self.frames[0].kind is _Kind.HEREDOC:
            return self.frames[0]
        return None

    def _ends_heredoc(self, frame: _Frame, char: str) -> bool:
        """Track the body's lines; True when ``char`` ends its delimiter line."""
        heredoc = frame.heredoc
        assert heredoc is not None
        if char != "\n":
            heredoc.line.append(char)
            return False
        line = "".join(heredoc.line)
        heredoc.line.clear()
        if (line.lstrip("\t") if heredoc.strip_tabs else line) != heredoc.delimiter:
            return False
        if len(self.frames) > 1:
            self._unreadable("a heredoc whose delimiter line ends it inside an open construct")
            return False
        self.frames.pop()
        self._start_heredoc()
        return True

    def _start_heredoc(self) -> None:
        if self.heredocs and not self.frames:
            self.frames.append(_Frame(_Kind.HEREDOC, heredoc=self.heredocs.pop(0)))

    # ------------------------------------------------------------------ words and commands

    def _word_start(self, char: str) -> None:
        if self.word is not None:
            return
        word = _Word(self.next_role, [char])
        self.next_role = _Role.ARG
        if word.role is _Role.ARG:
            verdict, word.shell = self.command.script_next()
            if verdict is None:
                word.unknown = _may_be_script(word.shell)
            elif verdict:
                word.script = _Script(self.shared)
        self.word = word

    def _word_char(self, char: str, pattern: bool = False) -> None:
        """A character the word's value gets as is (and the ``sh -c`` script with it)."""
        word = self.word
        if word is None:
            return
        word.value.append(char)
        word.tail.append(char)
        if word.script is None or word.unknown is not None:
            return
        if pattern:
            word.unknown = _script_unknown(word.shell, f"a pattern or tilde ({char})")
        else:
            word.script.feed(char)

    def _dynamic(self, what: str) -> None:
        """The word holds an expansion: its value (and any ``sh -c`` script) is unknown."""
        word = self.word
        if word is None:
            return
        word.static = False
        word.tail.clear()
        if word.script is not None and word.unknown is None:
            word.unknown = _script_unknown(word.shell, what)

    def _end_word(self) -> None:
        word = self.word
        if word is None:
            return
        self.word = None
        if word.script is not None:
            self._close_child(word.script)
        value = "".join(word.value) if word.static else None
        if word.role is _Role.DELIMITER:
            self._queue_heredoc(word, value)
        elif word.role is _Role.ARG:
            assignment = _ASSIGNMENT.match("".join(word.raw)) is not None
            self._add_word(Word(value, _name(word), assignment, word.generated))

    def _queue_heredoc(self, word: _Word, value: str | None) -> None:
        if value is None:
            self._unreadable("a heredoc delimiter holding an expansion")
            return
        source = self.delimiter_operator + "".join(word.raw).rstrip()
        strip_tabs = self.delimiter_operator == "<<-"
        self.heredocs.append(_Heredoc(value, strip_tabs, word.quoted, source))

    def _add_word(self, word: Word) -> None:
        """Keep ``word`` for its command; track the ``[[``/``case`` it opens or closes."""
        value = word.value
        at_command = self.command.at_name
        if self.dbracket is not None:
            if value == "]]":
                self._close_dbracket()
            elif value in _ARITH_TESTS:
                self.dbracket.arithmetic = True
        elif at_command and value == "[[":
            self.dbracket = _DBracket()
        if at_command and value == "case":
            self.case_depth += 1
        elif value == "esac" and self.case_depth and (at_command or self._after("in")):
            self.case_depth -= 1
        self.command.add(word)

    def _after(self, value: str) -> bool:
        words = self.command.words
        return bool(words) and words[-1].value == value

    def _close_dbracket(self) -> None:
        dbracket = self.dbracket
        assert dbracket is not None
        self.dbracket = None
        if dbracket.arithmetic and dbracket.labels:
            self.shared.defer(dbracket.labels[0], _DBRACKET)

    def _end_command(self) -> None:
        self._end_word()
        if self.whole is None:
            self.whole = _whole_script_unsafe(self.command)
        self.command = Command()
        self.next_role = _Role.ARG

    def _start_operator(self, char: str) -> None:
        word = self.word
        if char in "<>" and word is not None and "".join(word.raw).isdigit():
            self.word = None  # an io number (2>), not a word of the command
        else:
            self._end_word()
        self.operator = char

    def _extend_operator(self, char: str) -> None:
        self.operator += char
        if self.operator in ("<(", ">("):
            self.operator = ""
            self._word_start(char)
            self._dynamic("a process substitution")
            self._push_substitution()

    def _finish_operator(self) -> None:
        operator, self.operator = self.operator, ""
        if self.dbracket is not None:
            return
        if operator in ("<<", "<<-"):
            self.next_role = _Role.DELIMITER
            self.delimiter_operator = operator
        elif operator[0] in "<>" or operator.startswith("&>"):
            self.next_role = _Role.REDIRECT
        else:
            self._end_command()

    def _open_paren(self) -> None:
        if self.dbracket is not None:
            self._end_word()
        elif self.word is None and self.command.at_name:
            self.paren = True
        else:
            self._end_word()
            self.paren_depth += 1

    def _open_subshell(self) -> None:
        self._end_command()
        self.paren_depth += 1

    def _close_paren(self) -> None:
        self._end_word()
        if self.dbracket is not None:
            return
        if self.paren_depth:
            self.paren_depth -= 1
        elif self.case_depth:
            pass  # the end of a case pattern
        elif self.substitution:
            self.closed = True
            return
        self._end_command()

    def _push_substitution(self) -> None:
        if self.word is not None:
            self.word.generated = True
        self.frames.append(_Frame(_Kind.SUBST, child=_Script(self.shared, substitution=True)))

    def _unreadable(self, construct: str) -> None:
        if self.shared.unreadable is None:
            self.shared.unreadable = _unreadable(construct)


def _frame_unsafe(frame: _Frame) -> Unsafe | None:
    """What an open construct rules out for every marker inside it, nested ones included."""
    if frame.kind is _Kind.PARAM:
        return _PARAMETER
    if frame.kind is _Kind.ARITH:
        return _ARITHMETIC
    if frame.kind is _Kind.BACKQUOTE and frame.child is None:
        return _BACKQUOTE_IN_QUOTES
    if frame.kind is _Kind.DOLLAR_SINGLE and frame.control:
        return _AFTER_CONTROL
    if frame.heredoc is not None and frame.heredoc.quoted:
        return _quoted_heredoc(frame.heredoc.source)
    return None


def _name(word: _Word) -> str | None:
    """The command a word would name: known when its text after the last ``/`` is."""
    text = "".join(word.value if word.static else word.tail)
    if word.static or "/" in text:
        return text.rsplit("/", 1)[-1]
    return None


def _wrap(place: Place | Unsafe, layer: Layer) -> Place | Unsafe:
    if isinstance(place, Unsafe):
        return place
    return Place(place.quoting, (*place.layers, layer))


class ShellReader:
    """Reads a command as ``sh -c`` would, answering where each marker sits.

    Feed the literal text and, at each marker, ask :meth:`marker`, then feed the reference
    rendered for it; :meth:`signature` before and after tells whether the reference left
    the reading where it found it. :meth:`finish` returns what only the end revealed.
    """

    def __init__(self) -> None:
        self._shared = _Shared()
        self._script = _Script(self._shared)

    def feed(self, text: str) -> None:
        for char in text:
            self._script.feed(char)

    def marker(self, label: str) -> Place | Unsafe:
        return self._script.marker(label)

    def signature(self) -> tuple[object, ...]:
        return self._script.signature()

    def finish(self) -> Deferred | None:
        self._script.close()
        return self._shared.deferred
