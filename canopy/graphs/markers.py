"""Markers: ``{{name}}`` placeholders in node prompts, command nodes and hooks.

A marker is a bare name between ``{{`` and ``}}``; nothing else of jinja2 is reachable.
Block and comment delimiters are set to strings that cannot occur by accident, so shell
and prompt text such as ``${#x}``, ``{% raw %}`` or ``{# note #}`` stays literal, and an
AST walk refuses any ``{{ }}`` holding more than a bare name (filters, attributes, calls,
literals, whitespace control). Refusals name the marker and ``where`` it was found, so
``graph_edit`` can reject a template before it is ever stored.

Prompts render with the values themselves: a missing one renders exactly ``(none)``, so
no firing leaves a literal ``{{…}}`` behind. Shell commands never hold a value: each marker
becomes a reference to the environment variable ``<prefix><NAME>`` that the caller exports
(:func:`shell_command` builds both), in the form its quoting context needs
(:mod:`canopy.graphs.shellcontext` finds the context). Quoting a value instead cannot work:
``shlex.quote`` output placed inside the author's own ``"…"`` lets ``$(…)`` in a spec
name run. Where no reference is
safe (``eval``, arithmetic, a quoted heredoc, …) the command is refused, at ``graph_edit``
time by :func:`check_command` and again at firing time by :func:`render_command`.
Line endings in a template are normalised to ``\\n`` (jinja2's lexer does so).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from canopy.backlog.specformat import SECTION_NAMES
from canopy.errors import Refused
from canopy.graphs.shellcontext import Layer, Place, Quoting, ShellReader
from canopy.graphs.shellrefusals import CHANGED, Unsafe

if TYPE_CHECKING:
    from jinja2 import Environment, nodes

HOOK_MARKERS: tuple[str, ...] = (
    "graph_name",
    "workdir",
    "completed_specs",
    "spec_name",
    "spec_id",
    "blocker",
    "node",
)
"""The marker vocabulary of hooks (the reference page's seven)."""

NODE_MARKERS: tuple[str, ...] = (*HOOK_MARKERS, "spec_body", *SECTION_NAMES)
"""Node prompts and command nodes: the hook markers, the whole body and each section."""

HOOK_ENV_PREFIX = "CANOPY_HOOK_"
"""Command hooks read marker values from ``CANOPY_HOOK_<NAME>``."""

NODE_ENV_PREFIX = "CANOPY_"
"""Command nodes read them from ``CANOPY_<NAME>``, next to ``CANOPY_SPEC_ID`` and friends."""

ENV_VALUE_LIMIT = 100 * 1024
"""The largest marker value exported to a command, in bytes (one environment string holds
at most 128 KiB on Linux, name included)."""

NONE_VALUE = "(none)"
"""What a known marker with no value renders as, everywhere."""

_UNREACHABLE = "\x00"
"""Frames the block/comment delimiters. Templates holding a NUL are refused outright, so
blocks and comments can never open and everything outside ``{{ }}`` is literal text."""

_EXCERPT_LIMIT = 60


@cache
def _environment() -> Environment:
    """The jinja2 environment every template is read with.

    jinja2 is imported on first use, not with this module: the graph model imports the
    marker vocabulary, and reading a stored graph (``graph info``) parses no template.
    """
    from jinja2 import Environment, StrictUndefined

    return Environment(
        block_start_string=_UNREACHABLE + "{%",
        block_end_string="%}" + _UNREACHABLE,
        comment_start_string=_UNREACHABLE + "{#",
        comment_end_string="#}" + _UNREACHABLE,
        keep_trailing_newline=True,
        autoescape=False,
        undefined=StrictUndefined,
    )


def check_template(text: str, allowed: Sequence[str], where: str) -> None:
    """Refuse ``text`` unless every ``{{…}}`` in it is a bare name from ``allowed``."""
    _parse(text, allowed, where)


def check_command(
    text: str, allowed: Sequence[str], where: str, *, env_prefix: str | None = None
) -> None:
    """:func:`check_template`, plus: every marker has a safe rendering in the shell.

    ``env_prefix`` only sharpens the refusal's advice (``$CANOPY_HOOK_SPEC_NAME``).
    """
    _render_command(text, allowed, env_prefix, where)


def render_command(
    text: str, allowed: Sequence[str], env_prefix: str, where: str = "command"
) -> str:
    """The command with each marker replaced by a reference to ``<env_prefix><NAME>``
    chosen by its quoting context; raises Refused where no safe rendering exists.

    The values never enter the text, so the shell cannot parse them; the caller exports
    them with :func:`marker_env` and the same prefix. A command stored before this check
    existed is refused here rather than run unsafely.
    """
    return _render_command(text, allowed, env_prefix, where)


def shell_command(
    text: str,
    values: Mapping[str, str | None],
    allowed: Sequence[str],
    env_prefix: str,
    where: str = "command",
) -> tuple[str, dict[str, str]]:
    """A command ready to run: its text (:func:`render_command`) and the environment its
    marker references read (every marker in ``allowed``, ``(none)`` when unset).

    Linux caps one environment string at 128 KiB, so a value over
    :data:`ENV_VALUE_LIMIT` is not exported; a command that refers to such a marker is
    refused saying so, instead of failing to start with ``Argument list too long``.
    """
    rendered = render_command(text, allowed, env_prefix, where)
    used = {piece.name for piece in _pieces(text, allowed, where) if isinstance(piece, _Marker)}
    env: dict[str, str] = {}
    for name in allowed:
        value = _text(values.get(name))
        size = len(value.encode("utf-8", errors="surrogateescape"))
        if size <= ENV_VALUE_LIMIT:
            env.update(marker_env({name: value}, env_prefix))
        elif name in used:
            raise Refused(
                f"marker {{{{{name}}}}} in {where} holds {size // 1024} KiB, more than one "
                f"environment variable carries ({ENV_VALUE_LIMIT // 1024} KiB); read the spec "
                "with `canopy spec get $CANOPY_SPEC_ID --json` instead"
            )
    return rendered, env


def render(text: str, values: Mapping[str, str | None], allowed: Sequence[str]) -> str:
    """``text`` (a prompt, never a shell command) with every marker substituted.

    Every marker in ``allowed`` gets a value (``(none)`` when ``values`` has none), so the
    output never holds a marker literal. ``text`` is checked first: a template that was
    stored before the vocabulary changed is refused rather than rendered half-way.
    """
    template = _environment().from_string(_parse(text, allowed, "template"))
    return template.render({name: _text(values.get(name)) for name in allowed})


def marker_env(values: Mapping[str, str | None], prefix: str) -> dict[str, str]:
    """Marker values as environment variables: ``spec_name`` → ``<prefix>SPEC_NAME``.

    A rendered command's markers refer to these (:func:`render_command`), and a script
    can read them directly; missing values are ``(none)`` here too, as in prompts.
    """
    return {f"{prefix}{name.upper()}": _text(value) for name, value in values.items()}


@dataclass(frozen=True)
class _Marker:
    name: str


_FORMS = {
    Quoting.WORD: '"${{{}}}"',
    Quoting.DOUBLE: "${{{}}}",
    Quoting.HEREDOC: "${{{}}}",
    Quoting.COMMENT: "${{{}}}",
    Quoting.SINGLE: "'\"${{{}}}\"'",
    Quoting.DOLLAR_SINGLE: "'\"${{{}}}\"$'",
}
"""The reference to a variable in each quoting: expanded exactly once, as one word, never
parsed. Inside quotes that cannot expand, the quote is closed and reopened around it."""


def _render_command(text: str, allowed: Sequence[str], env_prefix: str | None, where: str) -> str:
    """Read the command as the shell will, marker by marker, writing each one's reference.

    The reader is fed each reference too, so what follows is read as the shell reads
    it; a reference that left the reading changed would be a bug, refused rather than run.
    """
    reader = ShellReader()
    rendered: list[str] = []
    for piece in _pieces(text, allowed, where):
        if isinstance(piece, str):
            reader.feed(piece)
            rendered.append(piece)
            continue
        place = reader.marker(piece.name)
        if isinstance(place, Unsafe):
            raise _unsafe(piece.name, where, place, env_prefix)
        reference = _reference(place, f"{env_prefix or ''}{piece.name.upper()}")
        before = reader.signature()
        reader.feed(reference)
        if reader.signature() != before:
            raise _unsafe(piece.name, where, CHANGED, env_prefix)
        rendered.append(reference)
    deferred = reader.finish()
    if deferred is not None:
        raise _unsafe(deferred.label, where, deferred.unsafe, env_prefix)
    return "".join(rendered)


def _reference(place: Place, variable: str) -> str:
    """The reference for ``place``, encoded through each script it is nested in."""
    reference = _FORMS[place.quoting].format(variable)
    for layer in place.layers:
        if layer is Layer.SINGLE_QUOTED_SCRIPT:
            reference = reference.replace("'", "'\\''")
        else:
            reference = reference.replace("\\", "\\\\").replace("`", "\\`")
    return reference


def _unsafe(name: str, where: str, unsafe: Unsafe, env_prefix: str | None) -> Refused:
    """The one-line refusal: the marker, where it is, why, and what to write instead."""
    marker = f"{{{{{name}}}}}"
    variable = "the marker's environment variable"
    if env_prefix is not None:
        variable = f"${env_prefix}{name.upper()}"
    hint = unsafe.hint.replace("{marker}", marker).replace("{var}", variable)
    return Refused(f"marker {marker} in {where} {unsafe.reason}; {hint}")


def _pieces(text: str, allowed: Sequence[str], where: str) -> list[str | _Marker]:
    """The checked template as literal text and markers, in order."""
    _parse(text, allowed, where)
    pieces: list[str | _Marker] = []
    for _line, kind, value in _environment().lex(text):
        if kind == "data":
            pieces.append(value)
        elif kind == "name":
            pieces.append(_Marker(value))
    return pieces


def _text(value: str | None) -> str:
    return NONE_VALUE if value is None else value


def _parse(text: str, allowed: Sequence[str], where: str) -> nodes.Template:
    """The template's AST after checking every marker in it; refuses the first bad one."""
    from jinja2 import TemplateSyntaxError, nodes

    if _UNREACHABLE in text:
        raise Refused(f"{where} contains a NUL character")
    try:
        tree = _environment().parse(text)
        sources = list(_marker_sources(text))
    except TemplateSyntaxError as error:
        detail = " ".join(error.message.split()) if error.message else "syntax error"
        raise Refused(f"bad marker syntax in {where}, line {error.lineno}: {detail}") from None
    expressions = iter(sources)
    for output in tree.find_all(nodes.Output):
        for node in output.nodes:
            if not isinstance(node, nodes.TemplateData):
                _check_marker(node, next(expressions), allowed, where)
    return tree


def _check_marker(node: nodes.Node, source: str, allowed: Sequence[str], where: str) -> None:
    """Refuse anything but a known bare name written plainly as ``{{name}}``."""
    from jinja2 import nodes

    if not isinstance(node, nodes.Name) or source.startswith("{{-") or source.endswith("-}}"):
        raise Refused(
            f"unsupported marker {_clip(source)} in {where}: only bare names such as "
            "{{spec_name}} are allowed (no filters, attributes, calls or whitespace control)"
        )
    if node.name not in allowed:
        raise Refused(
            f"unknown marker {{{{{node.name}}}}} in {where}; supported: {', '.join(allowed)}"
        )


def _marker_sources(text: str) -> Iterator[str]:
    """The source text of each ``{{…}}`` in order, as the lexer saw it (for refusals)."""
    parts: list[str] | None = None
    for _line, kind, value in _environment().lex(text):
        if kind == "variable_begin":
            parts = []
        if parts is not None:
            parts.append(value)
        if kind == "variable_end" and parts is not None:
            yield "".join(parts).strip()
            parts = None


def _clip(source: str) -> str:
    """A one-line excerpt of a marker's source, short enough for a refusal line."""
    flat = " ".join(source.split())
    return flat if len(flat) <= _EXCERPT_LIMIT else flat[: _EXCERPT_LIMIT - 1] + "…"
