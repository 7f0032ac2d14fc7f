"""What a simple shell command does with its words, as far as markers are concerned.

:mod:`canopy.shellcontext` reads quoting; this module answers the questions that depend on
the command a word belongs to: is the next word the script of ``sh -c`` (then a marker in
it is code for the inner shell), does the command evaluate its arguments as code
(``eval``, ``trap``, ``let``, ``declare -i``), does it start a shell that reads its script
from stdin or from a substitution (then any value the script prints may become code).

Words are judged by their value when it is known before run time. A command name only
known at run time (``"$SHELL" -c …``) may be a shell, so it is answered with "cannot
tell" rather than with a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
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

_SWITCH_USER = frozenset({"su", "runuser"})
"""Commands whose ``-c`` (or ``--command``) option word is followed by a shell script."""

_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "exec", "command", "nohup", "nice", "timeout", "stdbuf", "setsid"}
    | {"xargs", "chroot", "ionice", "flock", "chrt", "taskset", "unshare", "nsenter"}
    | {"runuser", "su", "busybox", "ssh", "docker", "podman", "kubectl"}
)
"""Commands that start another command named among their arguments."""

_RESERVED = frozenset({"!", "{", "if", "then", "else", "elif", "do", "while", "until", "time"})
_SOURCES = frozenset({"source", "."})
_ARGUMENT_FEEDERS = frozenset({"xargs", "parallel"})
"""Commands that paste their input into the command they run (``xargs -I{} sh -c 'echo {}'``)."""
_STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_EVALUATORS = frozenset({"eval", "trap", "alias", "let"})
_NAMERS = frozenset({"declare", "typeset", "local", "export", "readonly", "unset", "read"})
_NAME_OPTION_TAKERS = frozenset({"printf", "test", "[", "[["})

UNKNOWN_COMMAND = "a command only known at run time"
"""What :func:`evaluator` and :func:`script_reader` answer for a name such as ``"$cmd"``,
which might be ``eval`` or a shell."""


def command_words(words: Sequence[Word]) -> Sequence[Word]:
    """The words from the command name on: leading assignments and keywords skipped."""
    for index, word in enumerate(words):
        if not word.assignment and word.value not in _RESERVED:
            return words[index:]
    return []


def evaluator(words: Sequence[Word]) -> str | None:
    """``eval``, ``trap``, ``alias``, ``let`` or ``declare -i`` when the command is one of
    them (also behind ``command``/``builtin``), or :data:`UNKNOWN_COMMAND`: every
    argument of it may be code."""
    rest = _behind_builtin(command_words(words))
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


def takes_a_name(words: Sequence[Word]) -> str | None:
    """The command, when the next word is read as a variable name unless it holds ``=``:
    the arguments of ``declare``/``export``/``unset``/``read``…, the word after ``-v`` of
    ``printf``/``test``/``[[``. Bash evaluates a subscript in a name (``a[$(…)]``)."""
    rest = _behind_builtin(command_words(words))
    name = rest[0].name if rest else None
    if name in _NAMERS:
        return name
    if name in _NAME_OPTION_TAKERS and words and words[-1].value == "-v":
        return f"{name} -v"
    return None


def script_argument(words: Sequence[Word]) -> tuple[bool | None, str]:
    """Whether the next word is the script of a shell's ``-c`` (None: cannot tell), with
    that shell's name.

    Any word naming a shell counts, so wrappers (``timeout 5 sh -c``, ``sudo bash -c``,
    ``find . -exec sh -c``) are covered; so is ``su … -c``, and a command name only known
    at run time.
    """
    if words and _switches_user(words):
        return True, "su"
    command = command_words(words)
    for index, word in enumerate(words):
        dynamic_name = word.name is None and bool(command) and word is command[0]
        shell = _shell_name(word.name)
        if shell is None and not dynamic_name:
            continue
        name = shell or "the command"
        options = _shell_options(words[index + 1 :])
        if options.awaiting:
            return False, name
        script_next = options.has_c and not options.operands
        maybe = options.unknown and len(options.operands) == 1
        if dynamic_name:
            return (None if script_next or maybe else False), name
        return (None if maybe else script_next), name
    return False, ""


def script_reader(words: Sequence[Word]) -> str:
    """The shell (or ``source``) this command runs on a script that does not appear in the
    command's text, so values it prints could become code there; "" when there is none.

    That is a shell with neither ``-c`` nor a script file, or with ``-s``, or reading a
    substitution (``bash <(…)``) or stdin path as its script; a ``-c`` whose script is
    missing or generated (``bash -c "$(cat)"``); any shell run by ``xargs``, which may
    paste its input into the script; and ``source <(…)``.
    The shell is the command or started by a wrapper such as ``sudo`` or ``ssh``. A
    command name only known at run time may be any of these: :data:`UNKNOWN_COMMAND`.
    """
    command = command_words(words)
    if not command:
        return ""
    name = command[0].name
    if name is None:
        return UNKNOWN_COMMAND
    if name in _SOURCES:
        return name if _unseen_script(command[1] if len(command) > 1 else None) else ""
    if name in _ARGUMENT_FEEDERS:
        return next((shell for word in command if (shell := _shell_name(word.name))), "")
    for index, word in enumerate(command):
        shell = _shell_name(word.name)
        if shell is None:
            if name in _WRAPPERS:
                continue
            return ""
        options = _shell_options(command[index + 1 :])
        first = options.operands[0] if options.operands else None
        if options.has_c:
            return shell if first is None or first.value is None else ""
        return shell if options.has_s or _unseen_script(first) else ""
    return ""


@dataclass
class _ShellOptions:
    """A shell's words after its name: options, option arguments, operands."""

    has_c: bool = False
    has_s: bool = False
    operands: list[Word] = field(default_factory=list)
    awaiting: int = 0
    unknown: bool = False


def _shell_options(words: Sequence[Word]) -> _ShellOptions:
    """Parse a shell's arguments the way sh and bash do (``-o``/``-O`` take an argument)."""
    options = _ShellOptions()
    ended = False
    for word in words:
        value = word.value
        if options.awaiting:
            options.awaiting -= 1
        elif ended or options.operands:
            options.operands.append(word)
        elif value is None:
            options.unknown = True
            options.operands.append(word)
        elif value in ("-", "--"):
            ended = True
        elif value.startswith("--"):
            options.awaiting = int(value in ("--rcfile", "--init-file"))
        elif value[:1] in "-+" and len(value) > 1:
            options.has_c |= value[0] == "-" and "c" in value
            options.has_s |= value[0] == "-" and "s" in value
            options.awaiting = value.count("o") + value.count("O")
        else:
            options.operands.append(word)
    return options


def _behind_builtin(words: Sequence[Word]) -> list[Word]:
    """The words from the real command on, past ``command``/``builtin`` and their options."""
    rest = list(words)
    while rest and rest[0].value in ("command", "builtin"):
        rest = [word for word in rest[1:] if not (word.value or "").startswith("-")]
    return rest


def _switches_user(words: Sequence[Word]) -> bool:
    """``su``/``runuser`` with the next word as the argument of their ``-c``."""
    last = words[-1].value or ""
    option = last in ("-c", "--command") or (
        last[:1] == "-" and last[1:2] != "-" and last.endswith("c")
    )
    return option and any(word.name in _SWITCH_USER for word in words[:-1])


def _unseen_script(word: Word | None) -> bool:
    """Whether a script operand is missing, generated or stdin: text not in the command."""
    return word is None or word.generated or word.value in _STDIN_PATHS


def _integer_option(value: str | None) -> bool:
    return value is not None and value[:1] in "-+" and "i" in value[1:]


def _shell_name(name: str | None) -> str | None:
    return name if name in SHELLS else None
