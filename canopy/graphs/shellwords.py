"""What a simple shell command does with its words, as far as markers are concerned.

:mod:`canopy.graphs.shellscript` reads quoting; this module answers the questions that depend on
the command a word belongs to: is the next word the script of ``sh -c`` (then a marker in
it is code for the inner shell), does the command evaluate its arguments as code
(``eval``, ``trap``, ``let``, ``declare -i``) or read them as variable names, does it
start a shell on a script it does not spell out (stdin, a substitution, xargs input).

Words are judged by their value when it is known before run time. A command name only
known at run time (``"$SHELL" -c …``) may be a shell or ``eval``, so it is answered with
"cannot tell" rather than with a guess. :class:`Command` takes words one at a time and
keeps what the questions need, so reading a long command stays linear.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    """One word of a simple command."""

    value: str | None
    """The word after quote removal, or None when it holds an expansion."""
    name: str | None
    """The command it names when it is a command name: the value's basename, or the
    literal text after its last ``/`` (``"$HOME"/bin/notify``); None when unknown."""
    assignment: bool
    """Written as ``NAME=…`` (a prefix assignment when it precedes the command name)."""
    generated: bool
    """Holds a command or process substitution, so its text comes from running code."""


SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "lksh", "oksh", "ash", "yash", "posh"}
    | {"csh", "tcsh", "fish"}
)
"""Shells whose ``-c`` script is rendered for an inner shell. csh and fish are not sh, but
a reference rendered for sh either reads the variable there too or is an error, never
code, while a value pasted into their script would be code."""

UNKNOWN_COMMAND = "a command only known at run time"
"""What :meth:`Command.evaluator` and :meth:`Command.script_reader` answer for a name such
as ``"$cmd"``, which might be ``eval`` or a shell."""

_SWITCH_USER = frozenset({"su", "runuser"})
"""Commands whose ``-c`` (or ``--command``) option word is followed by a shell script."""

_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "exec", "command", "nohup", "nice", "timeout", "stdbuf", "setsid"}
    | {"chroot", "ionice", "flock", "chrt", "taskset", "unshare", "nsenter", "runuser", "su"}
    | {"busybox", "ssh", "docker", "podman", "kubectl"}
)
"""Commands that start another command named among their arguments."""

_ARGUMENT_FEEDERS = frozenset({"xargs", "parallel"})
"""Commands that paste their input into the command they run (``xargs -I{} sh -c …``)."""

_RESERVED = frozenset({"!", "{", "if", "then", "else", "elif", "do", "while", "until", "time"})
_SOURCES = frozenset({"source", "."})
_STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_EVALUATORS = frozenset({"eval", "trap", "alias", "let"})
_NAMERS = _DECLARERS | {"unset", "read"}
_NAME_OPTION_TAKERS = frozenset({"printf", "test", "[", "[["})


@dataclass
class _ShellOptions:
    """A shell's words after its name, read the way sh and bash read them: options,
    option arguments (``-o``/``-O`` take one), then operands (the first two kept)."""

    has_c: bool = False
    has_s: bool = False
    operands: list[Word] = field(default_factory=list)
    awaiting: int = 0
    ended: bool = False
    unknown: bool = False

    def read(self, word: Word) -> None:
        value = word.value
        if self.awaiting:
            self.awaiting -= 1
        elif self.ended or self.operands or value is None:
            self.unknown |= value is None and not self.ended and not self.operands
            if len(self.operands) < 2:
                self.operands.append(word)
        elif value in ("-", "--"):
            self.ended = True
        elif value.startswith("--"):
            self.awaiting = int(value in ("--rcfile", "--init-file"))
        elif value[:1] in "-+" and len(value) > 1:
            self.has_c |= value[0] == "-" and "c" in value
            self.has_s |= value[0] == "-" and "s" in value
            self.awaiting = value.count("o") + value.count("O")
        else:
            self.operands.append(word)


class Command:
    """The words of one simple command, taken as they are read."""

    def __init__(self) -> None:
        self.words: list[Word] = []
        self._name_at: int | None = None
        self._shell_at: int | None = None
        self._shell_options = _ShellOptions()
        self._switches_user = False

    @property
    def at_name(self) -> bool:
        """Whether the next word is the command name (only assignments and keywords so far)."""
        return self._name_at is None

    def add(self, word: Word) -> None:
        index = len(self.words)
        self.words.append(word)
        if self._name_at is None and not (word.assignment or word.value in _RESERVED):
            self._name_at = index
        if self._shell_at is not None:
            self._shell_options.read(word)
        elif word.name in SHELLS or (word.name is None and self._name_at == index):
            self._shell_at = index
        self._switches_user |= word.name in _SWITCH_USER

    def script_next(self) -> tuple[bool | None, str]:
        """Whether the next word is the script of a shell's ``-c`` (None: cannot tell),
        with that shell's name.

        The first word naming a shell counts, so wrappers (``timeout 5 sh -c``, ``sudo
        bash -c``, ``find . -exec sh -c``) are covered, and so are ``su … -c`` and a command
        name only known at run time.
        """
        if self._switches_user and _is_c_option(self.words[-1].value):
            return True, "su"
        if self._shell_at is None:
            return False, ""
        dynamic = self.words[self._shell_at].name is None
        shell = "the command" if dynamic else self.words[self._shell_at].name or ""
        options = self._shell_options
        if options.awaiting:
            return False, shell
        script_next = options.has_c and not options.operands
        maybe = options.unknown and len(options.operands) == 1
        if dynamic:
            return (None if script_next or maybe else False), shell
        return (None if maybe else script_next), shell

    def evaluator(self) -> str | None:
        """``eval``, ``trap``, ``alias``, ``let`` or ``declare -i`` when the command is one
        of them (also behind ``command``/``builtin``), or :data:`UNKNOWN_COMMAND`: every
        argument of it may be code."""
        rest = self._behind_builtin()
        if not rest:
            return None
        name = rest[0].name
        if name is None:
            return UNKNOWN_COMMAND
        if name in _EVALUATORS:
            return name
        if name in _DECLARERS and any(_integer_option(word.value) for word in rest[1:]):
            return f"{name} -i"
        return None

    def takes_a_name(self) -> str | None:
        """The command, when the next word is read as a variable name unless it holds ``=``:
        the arguments of ``declare``/``export``/``unset``/``read``…, the word after ``-v`` of
        ``printf``/``test``/``[[``. Bash evaluates a subscript in a name (``a[$(…)]``)."""
        rest = self._behind_builtin()
        name = rest[0].name if rest else None
        if name in _NAMERS:
            return name
        if name in _NAME_OPTION_TAKERS and self.words[-1].value == "-v":
            return f"{name} -v"
        return None

    def script_reader(self) -> str:
        """The shell (or ``source``) this command runs on a script that does not appear in
        the command's text, so values it prints could become code there; "" when none.

        That is a shell with neither ``-c`` nor a script file, or with ``-s``, or reading a
        substitution (``bash <(…)``) or stdin path as its script; a ``-c`` whose script is
        missing or generated (``bash -c "$(cat)"``); any shell run by ``xargs``, which may
        paste its input into the script; and ``source <(…)``. The shell is the command or
        started by a wrapper such as ``sudo`` or ``ssh``. A command name only known at run
        time may be any of these: :data:`UNKNOWN_COMMAND`.
        """
        if self._name_at is None:
            return ""
        name = self.words[self._name_at].name
        if name is None:
            return UNKNOWN_COMMAND
        if name in _SOURCES:
            script = self.words[self._name_at + 1] if len(self.words) > self._name_at + 1 else None
            return name if _unseen_script(script) else ""
        if self._shell_at is None:
            return ""
        shell = self.words[self._shell_at].name or ""
        if name in _ARGUMENT_FEEDERS:
            return shell
        if self._shell_at != self._name_at and name not in _WRAPPERS:
            return ""
        options = self._shell_options
        first = options.operands[0] if options.operands else None
        if options.has_c:
            return shell if first is None or first.value is None else ""
        return shell if options.has_s or _unseen_script(first) else ""

    def _behind_builtin(self) -> list[Word]:
        """The words from the real command on, past ``command``/``builtin`` and options."""
        if self._name_at is None:
            return []
        rest = self.words[self._name_at :]
        while rest and rest[0].value in ("command", "builtin"):
            rest = [word for word in rest[1:] if not (word.value or "").startswith("-")]
        return rest


def _is_c_option(value: str | None) -> bool:
    """``-c``, ``--command`` or a short cluster ending in ``c`` (``-lc``)."""
    if value is None:
        return False
    return value in ("-c", "--command") or (
        value[:1] == "-" and value[1:2] != "-" and value.endswith("c")
    )


def _unseen_script(word: Word | None) -> bool:
    """Whether a script operand is missing, generated or stdin: text not in the command."""
    return word is None or word.generated or word.value in _STDIN_PATHS


def _integer_option(value: str | None) -> bool:
    return value is not None and value[:1] in "-+" and "i" in value[1:]
