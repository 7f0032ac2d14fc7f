"""The commands of one shell script, as its reader meets their words: what the next word
is to its command, the heredocs waiting for their bodies, and the ``[[ … ]]``, ``case``
and parentheses open around it.

The quoting reader (:mod:`canopy.graphs.shellscript`) finds where words and operators
begin and end; this module keeps what they mean at command level, which is what decides
whether a word is an argument, a redirection target or a heredoc delimiter, and which
commands of the script rule markers out (:mod:`canopy.graphs.shellwords` judges each).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from canopy.graphs.shellrefusals import DBRACKET, Shared
from canopy.graphs.shellwords import Command, Word

_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


class Role(enum.Enum):
    """What a word is to its command."""

    ARG = enum.auto()
    REDIRECT = enum.auto()
    DELIMITER = enum.auto()


@dataclass
class Heredoc:
    """A heredoc: queued when its ``<<`` is read, its body read from the next line."""

    delimiter: str
    strip_tabs: bool
    quoted: bool
    source: str
    line: list[str] = field(default_factory=list)


@dataclass
class DBracket:
    """An open bash ``[[ … ]]`` test: whether it compares numbers, and its markers."""

    arithmetic: bool = False
    labels: list[str] = field(default_factory=list)


class Grammar:
    """The command-level state of one script; the reader hands it each finished word and
    operator."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.command = Command()
        self.next_role = Role.ARG
        self.delimiter_operator = ""
        self.heredocs: list[Heredoc] = []
        self.paren_depth = 0
        self.case_depth = 0
        self.dbracket: DBracket | None = None

    def take_role(self) -> Role:
        """What the word starting now is to its command; the next one is an argument
        unless an operator says otherwise."""
        role, self.next_role = self.next_role, Role.ARG
        return role

    def queue_heredoc(self, delimiter: str, written: str, quoted: bool) -> None:
        """A heredoc whose body starts on the next line: ``delimiter`` ends it, written as
        ``written`` (quoted, when the body is read as is)."""
        source = self.delimiter_operator + written.rstrip()
        strip_tabs = self.delimiter_operator == "<<-"
        self.heredocs.append(Heredoc(delimiter, strip_tabs, quoted, source))

    def add_word(self, word: Word) -> None:
        """Keep ``word`` for its command; track the ``[[``/``case`` it opens or closes."""
        value = word.value
        at_command = self.command.at_name
        if self.dbracket is not None:
            if value == "]]":
                self._close_dbracket()
            elif value in _ARITH_TESTS:
                self.dbracket.arithmetic = True
        elif at_command and value == "[[":
            self.dbracket = DBracket()
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
            self.shared.defer(dbracket.labels[0], DBRACKET)

    def operator(self, operator: str) -> bool:
        """An operator ended: the role of the word after it; True when it ends the
        command (inside ``[[ … ]]`` none does)."""
        if self.dbracket is not None:
            return False
        if operator in ("<<", "<<-"):
            self.next_role = Role.DELIMITER
            self.delimiter_operator = operator
        elif operator[0] in "<>" or operator.startswith("&>"):
            self.next_role = Role.REDIRECT
        else:
            return True
        return False

    def end_command(self) -> Command:
        """The command ended: it, and a fresh one for the words that follow."""
        ended, self.command = self.command, Command()
        self.next_role = Role.ARG
        return ended
