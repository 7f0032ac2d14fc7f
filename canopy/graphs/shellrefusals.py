"""Why no reference to a variable is safe at a point of a shell script: the refusals
the shell reader gives, each with its reason and what to write instead.

Kept apart from the reader so the wording of every refusal is in one place, and so the
reader's parts (:mod:`canopy.graphs.shellgrammar`, :mod:`canopy.graphs.shellscript`,
:mod:`canopy.graphs.shellcontext`) share one catalogue, and the one record
(:class:`Shared`) of the refusals that hold for every later marker. ``{var}`` in a hint
stands for the environment variable's name, ``{marker}`` for the marker as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from canopy.graphs.shellwords import UNKNOWN_COMMAND, Command


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


@dataclass
class Shared:
    """What every reader of one command shares: the first unreadable construct and the
    first refusal that the rest of the script revealed."""

    unreadable: Unsafe | None = None
    deferred: Deferred | None = None

    def defer(self, label: str, unsafe: Unsafe) -> None:
        if self.deferred is None:
            self.deferred = Deferred(label, unsafe)


_VAR = "{var}"
_EVALUATED_HINT = f"refer to {_VAR} (double-quoted) inside the evaluated text instead"
EVALUATED = {
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
ARITHMETIC = Unsafe(
    "sits inside arithmetic ($((…)), ((…)) or $[…]), where bash evaluates the value as an "
    "expression that can run code",
    f"check that {_VAR} is a number in a script first",
)
PARAMETER = Unsafe(
    "sits inside a parameter expansion (${…}), whose words are patterns, defaults or subscripts",
    f"use {_VAR} in a word of its own",
)
BACKQUOTE_IN_QUOTES = Unsafe(
    "sits in backquotes inside double quotes, a heredoc or ${…}, whose escaping shells do "
    "not agree on",
    "use $(…) instead of backquotes",
)
SUBSCRIPT = Unsafe(
    "sits in an array subscript (name[…]), which bash evaluates as arithmetic that can run code",
    f"use {_VAR} as a value, not a subscript",
)
DELIMITER = Unsafe(
    "is part of a heredoc delimiter (<<…), which is never expanded",
    "use a fixed delimiter word",
)
AFTER_BACKSLASH = Unsafe(
    "directly follows a backslash, which would quote the first character of its reference",
    "remove the backslash",
)
AFTER_DOLLAR = Unsafe(
    "directly follows a $, which would turn its reference into another expansion",
    f"separate them, or write {_VAR}",
)
AFTER_CONTROL = Unsafe(
    "directly follows \\c in $'…', which swallows the next character",
    "remove the \\c",
)
INTEGER = Unsafe(
    "is assigned by a command declaring integer variables (-i), whose values bash evaluates "
    "as arithmetic that can run code",
    f"declare the variable without -i, or check that {_VAR} is a number first",
)
DBRACKET = Unsafe(
    "sits in a bash [[ … ]] test with an arithmetic comparison (-eq, -lt, …), which "
    "evaluates the value as arithmetic that can run code",
    "compare numbers with [ … ], which does not evaluate them",
)
CHANGED = Unsafe(
    "could not be rendered without changing how the rest of the command is read",
    f"use {_VAR}",
)


def quoted_heredoc(source: str) -> Unsafe:
    return Unsafe(
        f"sits inside a quoted heredoc ({source}), where no value can be expanded",
        f"use an unquoted heredoc or {_VAR}",
    )


def script_outside_single_quotes(shell: str) -> Unsafe:
    return Unsafe(
        f"sits in the script of {shell} -c outside single quotes, where the outer shell "
        "would paste the value into the script the inner shell runs",
        f"single-quote the script: {shell} -c '… {{marker}} …'",
    )


def script_unknown(shell: str, what: str) -> Unsafe:
    return Unsafe(
        f"sits in the script of {shell} -c after {what}, so the script the inner shell "
        "reads is only known at run time",
        "single-quote the whole script",
    )


def variable_name(command: str) -> Unsafe:
    return Unsafe(
        f"is read as a variable name by {command}, and bash evaluates a subscript in a "
        "name (a[…]) as arithmetic that can run code",
        f"name the variable literally and pass {_VAR} as its value",
    )


def may_be_script(shell: str) -> Unsafe:
    return Unsafe(
        f"is an argument of {shell}, whose earlier words are only known at run time, so "
        "it may be the script of a -c",
        f"write the options literally, or use {_VAR} inside a script",
    )


_ALIASES = Unsafe(
    "is in a script that defines aliases, which can turn any later word into eval",
    f"use a function, or {_VAR}",
)


def whole_script_unsafe(command: Command) -> Unsafe | None:
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


def unreadable(construct: str) -> Unsafe:
    return Unsafe(
        f"follows {construct}, which shells do not all read the same way, so where the "
        "value would land cannot be told",
        f"simplify the command, or use {_VAR}",
    )
