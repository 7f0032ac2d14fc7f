"""Reading a shell script a character at a time, as ``sh``, ``dash`` and ``bash`` would:
the quoting each character is in, the words and operators it makes, and the scripts
nested in it.

A character-at-a-time state machine over POSIX sh syntax (plus bash's ``$'…'``,
``$"…"``, ``[[``, ``((``, ``<(…)``). Nested scripts are nested readers: ``$(…)``,
backquotes, and the single-quoted script of ``sh -c`` each get their own, fed the
characters that shell will parse (backquotes and ``sh -c`` decode their escapes first).
What the words mean to their commands is kept by :mod:`canopy.graphs.shellgrammar`;
where a marker at the current point sits is answered from this state by
:mod:`canopy.graphs.shellcontext`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from canopy.graphs.shellgrammar import Grammar, Heredoc, Role
from canopy.graphs.shellrefusals import (
    DBRACKET,
    Shared,
    Unsafe,
    may_be_script,
    script_unknown,
    unreadable,
    whole_script_unsafe,
)
from canopy.graphs.shellwords import Word


class Kind(enum.Enum):
    """The quoting construct a frame is."""

    SINGLE = enum.auto()
    DOLLAR_SINGLE = enum.auto()
    DOUBLE = enum.auto()
    PARAM = enum.auto()
    ARITH = enum.auto()
    SUBST = enum.auto()
    BACKQUOTE = enum.auto()
    HEREDOC = enum.auto()
    COMMENT = enum.auto()


_OPERATORS = frozenset(
    {";", ";;", ";&", ";;&", "&", "&&", "&>", "&>>", "|", "||", "|&"}
    | {"<", "<<", "<<-", "<<<", "<&", "<>", "<(", ">", ">>", ">&", ">|", ">("}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SPECIAL_PARAMETERS = frozenset("$#?!-@*0123456789")


@dataclass(eq=False)
class Frame:
    """A quoting construct open in a script; nested scripts hang off ``child``."""

    kind: Kind
    child: Script | None = None
    closer: str = ""
    depth: int = 0
    closing: bool = False
    in_quotes: bool = False
    control: bool = False
    heredoc: Heredoc | None = None


@dataclass(eq=False)
class OpenWord:
    """The word being read at script level, with the script it is for ``sh -c``."""

    role: Role
    raw: list[str]
    value: list[str] = field(default_factory=list)
    static: bool = True
    quoted: bool = False
    generated: bool = False
    tail: list[str] = field(default_factory=list)
    shell: str = ""
    script: Script | None = None
    unknown: Unsafe | None = None


class Script:
    """One script being read: the top level, a ``$(…)``, backquotes or a ``sh -c`` script."""

    def __init__(self, shared: Shared, substitution: bool = False) -> None:
        self.shared = shared
        self.substitution = substitution
        self.closed = False
        self.frames: list[Frame] = []
        self.escape = False
        self.backslash = False
        self.dollar = False
        self.dollar_paren = False
        self.paren = False
        self.operator = ""
        self.word: OpenWord | None = None
        self.grammar = Grammar(shared)
        self.labels: list[str] = []
        """The markers placed in this script, for the refusals its end may reveal."""
        self.whole: Unsafe | None = None

    def close(self) -> None:
        """End of this script: refusals that needed the whole of it are decided now."""
        for frame in self.frames:
            if frame.child is not None:
                self._close_child(frame.child)
        self.settle()
        self._end_command()
        dbracket = self.grammar.dbracket
        if dbracket is not None and dbracket.labels:
            self.shared.defer(dbracket.labels[0], DBRACKET)
        if self.whole is not None and self.labels:
            self.shared.defer(self.labels[0], self.whole)

    def _close_child(self, child: Script) -> None:
        """A nested script shares this one's stdin: a shell it runs on stdin is this
        script's concern too (``sh -c 'sh' <<EOF``)."""
        child.close()
        if self.whole is None:
            self.whole = child.whole

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
        if top is None or top.kind in (Kind.DOUBLE, Kind.PARAM, Kind.ARITH):
            return not self.escape
        return top.heredoc is not None and not top.heredoc.quoted and not self.escape

    def _read(self, char: str) -> None:
        heredoc = self.heredoc_frame()
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
                self.frames.append(Frame(Kind.ARITH, closer=")"))
                return
            self._push_substitution()
        if self.paren:
            self.paren = False
            if char == "(":
                self.frames.append(Frame(Kind.ARITH, closer=")"))
                return
            self._open_subshell()
        if self.operator:
            if any(op.startswith(self.operator + char) for op in _OPERATORS):
                self._extend_operator(char)
                return
            self._finish_operator()
        self._dispatch(char)

    def settle(self) -> None:
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
        elif top.kind is Kind.SINGLE:
            self._in_single(char)
        elif top.kind is Kind.DOLLAR_SINGLE:
            self._in_dollar_single(char, top)
        elif top.kind is Kind.DOUBLE:
            self._in_double(char)
        elif top.kind is Kind.PARAM:
            self._in_param(char, top)
        elif top.kind is Kind.ARITH:
            self._in_arith(char, top)
        elif top.kind is Kind.SUBST:
            self._in_substitution(char, top)
        elif top.kind is Kind.BACKQUOTE:
            self._in_backquote(char, top)
        elif top.kind is Kind.HEREDOC:
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
            self.frames.append(Frame(Kind.COMMENT))
        else:
            self._word_start(char)
            self._word_syntax(char)

    def _word_syntax(self, char: str) -> None:
        """A character that starts or continues a word at script level."""
        word = self.word
        assert word is not None
        if char == "'":
            word.quoted = True
            self.frames.append(Frame(Kind.SINGLE))
        elif char == '"':
            word.quoted = True
            self.frames.append(Frame(Kind.DOUBLE))
        elif char == "\\":
            word.quoted = True
            self.escape = True
        elif char == "$":
            self._dynamic("an expansion ($…)")
            self.dollar = True
        elif char == "`":
            self._dynamic("a command substitution")
            word.generated = True
            self.frames.append(Frame(Kind.BACKQUOTE, child=Script(self.shared)))
        elif char in "*?[{}" or (char == "~" and not word.value):
            self._word_char(char, pattern=True)
        else:
            self._word_char(char)

    def _escaped(self, char: str) -> None:
        """The character after a backslash, read as the innermost quoting reads it."""
        top = self.frames[-1] if self.frames else None
        if top is None:
            self._word_char(char)
        elif top.kind is Kind.DOUBLE:
            if char not in '$`"\\':
                self._word_char("\\")
            self._word_char(char)
        elif top.kind is Kind.DOLLAR_SINGLE:
            top.control = char == "c"
        elif top.kind is Kind.BACKQUOTE and top.child is not None:
            if char not in "$`\\":
                top.child.feed("\\")
            top.child.feed(char)

    def _after_dollar(self, char: str) -> bool:
        """The character after a ``$``; True when it belongs to the expansion."""
        top = self.frames[-1] if self.frames else None
        plain = top is None or (top.kind is Kind.PARAM and not top.in_quotes)
        if char == "{":
            self.frames.append(Frame(Kind.PARAM, in_quotes=self._in_quotes()))
        elif char == "(":
            self.dollar_paren = True
        elif char == "[":
            self.frames.append(Frame(Kind.ARITH, closer="]"))
        elif char == "'" and plain:
            self.frames.append(Frame(Kind.DOLLAR_SINGLE))
        elif char == '"' and top is None:
            self.frames.append(Frame(Kind.DOUBLE))
        else:
            return char in _SPECIAL_PARAMETERS
        return True

    def _in_quotes(self) -> bool:
        return any(f.kind in (Kind.DOUBLE, Kind.HEREDOC) or f.in_quotes for f in self.frames)

    def _in_single(self, char: str) -> None:
        if char == "'":
            self.frames.pop()
        else:
            self._word_char(char)

    def _in_dollar_single(self, char: str, frame: Frame) -> None:
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
            self.frames.append(Frame(Kind.BACKQUOTE, in_quotes=True))
        else:
            self._word_char(char)

    def _in_param(self, char: str, frame: Frame) -> None:
        if char == "}":
            self.frames.pop()
        elif char == "\\":
            self.escape = True
        elif char == "$":
            self.dollar = True
        elif char == "`":
            self.frames.append(Frame(Kind.BACKQUOTE, in_quotes=True))
        elif char == '"':
            self.frames.append(Frame(Kind.DOUBLE))
        elif char == "'" and not frame.in_quotes:
            self.frames.append(Frame(Kind.SINGLE))
        elif char in "'{":
            self._unreadable(f"{char} inside ${{…}}")

    def _in_arith(self, char: str, frame: Frame) -> None:
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
            self.frames.append(Frame(Kind.BACKQUOTE, in_quotes=True))
        elif char == '"':
            self.frames.append(Frame(Kind.DOUBLE))
        elif char == "'":
            self._unreadable("a single quote inside arithmetic")

    def _in_substitution(self, char: str, frame: Frame) -> None:
        child = frame.child
        assert child is not None
        child.feed(char)
        if child.closed:
            self.frames.pop()
            self._close_child(child)

    def _in_backquote(self, char: str, frame: Frame) -> None:
        if char == "`":
            self.frames.pop()
            if frame.child is not None:
                self._close_child(frame.child)
        elif char == "\\":
            self.escape = True
        elif frame.child is not None:
            frame.child.feed(char)

    def _in_heredoc(self, char: str, frame: Frame) -> None:
        heredoc = frame.heredoc
        assert heredoc is not None
        if heredoc.quoted:
            return
        if char == "\\":
            self.escape = True
        elif char == "$":
            self.dollar = True
        elif char == "`":
            self.frames.append(Frame(Kind.BACKQUOTE, in_quotes=True))

    def _in_comment(self, char: str) -> None:
        if char == "\n":
            self.frames.pop()
            self._plain(char)

    # ------------------------------------------------------------------ heredocs

    def heredoc_frame(self) -> Frame | None:
        if self.frames and self.frames[0].kind is Kind.HEREDOC:
            return self.frames[0]
        return None

    def _ends_heredoc(self, frame: Frame, char: str) -> bool:
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
        heredocs = self.grammar.heredocs
        if heredocs and not self.frames:
            self.frames.append(Frame(Kind.HEREDOC, heredoc=heredocs.pop(0)))

    # ------------------------------------------------------------------ words and commands

    def _word_start(self, char: str) -> None:
        if self.word is not None:
            return
        word = OpenWord(self.grammar.take_role(), [char])
        if word.role is Role.ARG:
            verdict, word.shell = self.grammar.command.script_next()
            if verdict is None:
                word.unknown = may_be_script(word.shell)
            elif verdict:
                word.script = Script(self.shared)
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
            word.unknown = script_unknown(word.shell, f"a pattern or tilde ({char})")
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
            word.unknown = script_unknown(word.shell, what)

    def _end_word(self) -> None:
        word = self.word
        if word is None:
            return
        self.word = None
        if word.script is not None:
            self._close_child(word.script)
        value = "".join(word.value) if word.static else None
        if word.role is Role.DELIMITER:
            if value is None:
                self._unreadable("a heredoc delimiter holding an expansion")
            else:
                self.grammar.queue_heredoc(value, "".join(word.raw), word.quoted)
        elif word.role is Role.ARG:
            assignment = _ASSIGNMENT.match("".join(word.raw)) is not None
            self.grammar.add_word(Word(value, _name(word), assignment, word.generated))

    def _end_command(self) -> None:
        self._end_word()
        ended = self.grammar.end_command()
        if self.whole is None:
            self.whole = whole_script_unsafe(ended)

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
        if self.grammar.operator(operator):
            self._end_command()

    def _open_paren(self) -> None:
        grammar = self.grammar
        if grammar.dbracket is not None:
            self._end_word()
        elif self.word is None and grammar.command.at_name:
            self.paren = True
        else:
            self._end_word()
            grammar.paren_depth += 1

    def _open_subshell(self) -> None:
        self._end_command()
        self.grammar.paren_depth += 1

    def _close_paren(self) -> None:
        self._end_word()
        grammar = self.grammar
        if grammar.dbracket is not None:
            return
        if grammar.paren_depth:
            grammar.paren_depth -= 1
        elif grammar.case_depth:
            pass  # the end of a case pattern
        elif self.substitution:
            self.closed = True
            return
        self._end_command()

    def _push_substitution(self) -> None:
        if self.word is not None:
            self.word.generated = True
        self.frames.append(Frame(Kind.SUBST, child=Script(self.shared, substitution=True)))

    def _unreadable(self, construct: str) -> None:
        if self.shared.unreadable is None:
            self.shared.unreadable = unreadable(construct)


def _name(word: OpenWord) -> str | None:
    """The command a word would name: known when its text after the last ``/`` is."""
    text = "".join(word.value if word.static else word.tail)
    if word.static or "/" in text:
        return text.rsplit("/", 1)[-1]
    return None
