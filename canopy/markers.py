"""Markers: ``{{name}}`` placeholders in node prompts, command nodes and hooks (DESIGN §7).

A marker is a bare name between ``{{`` and ``}}``; nothing else of jinja2 is reachable.
Block and comment delimiters are set to strings that cannot occur by accident, so shell
and prompt text such as ``${#x}``, ``{% raw %}`` or ``{# note #}`` stays literal, and an
AST walk refuses any ``{{ }}`` holding more than a bare name (filters, attributes, calls,
literals, whitespace control). Refusals name the marker and ``where`` it was found, so
``graph_edit`` can reject a template before it is ever stored.

Rendering gives every allowed marker a value: a missing one renders exactly ``(none)``,
so no firing leaves a literal ``{{…}}`` behind. For shell commands every substituted value
is quoted with :func:`shlex.quote`, so a spec name or blocker text cannot inject syntax.
Line endings in a template are normalised to ``\\n`` (jinja2's lexer does so).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence

from jinja2 import Environment, StrictUndefined, TemplateSyntaxError, nodes

from canopy.errors import Refused
from canopy.specformat import SECTION_NAMES

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

NONE_VALUE = "(none)"
"""What a known marker with no value renders as, everywhere."""

_UNREACHABLE = "\x00"
"""Frames the block/comment delimiters. Templates holding a NUL are refused outright, so
blocks and comments can never open and everything outside ``{{ }}`` is literal text."""

_ENV = Environment(
    block_start_string=_UNREACHABLE + "{%",
    block_end_string="%}" + _UNREACHABLE,
    comment_start_string=_UNREACHABLE + "{#",
    comment_end_string="#}" + _UNREACHABLE,
    keep_trailing_newline=True,
    autoescape=False,
    undefined=StrictUndefined,
)
_EXCERPT_LIMIT = 60


def check_template(text: str, allowed: Sequence[str], where: str) -> None:
    """Refuse ``text`` unless every ``{{…}}`` in it is a bare name from ``allowed``."""
    _parse(text, allowed, where)


def render(
    text: str, values: Mapping[str, str | None], allowed: Sequence[str], shell: bool = False
) -> str:
    """``text`` with every marker substituted; ``shell`` quotes each value for a shell.

    Every marker in ``allowed`` gets a value (``(none)`` when ``values`` has none), so the
    output never holds a marker literal. ``text`` is checked first: a template that was
    stored before the vocabulary changed is refused rather than rendered half-way.
    """
    template = _ENV.from_string(_parse(text, allowed, "template"))
    return template.render({name: _substitute(values.get(name), shell) for name in allowed})


def marker_env(values: Mapping[str, str | None], prefix: str) -> dict[str, str]:
    """Marker values as environment variables: ``spec_name`` → ``<prefix>SPEC_NAME``.

    Commands read these instead of (or besides) the quoted markers; missing values are
    ``(none)`` here too, so a script sees the same text a marker would have rendered.
    """
    return {f"{prefix}{name.upper()}": _text(value) for name, value in values.items()}


def _text(value: str | None) -> str:
    return NONE_VALUE if value is None else value


def _substitute(value: str | None, shell: bool) -> str:
    text = _text(value)
    return shlex.quote(text) if shell else text


def _parse(text: str, allowed: Sequence[str], where: str) -> nodes.Template:
    """The template's AST after checking every marker in it; refuses the first bad one."""
    if _UNREACHABLE in text:
        raise Refused(f"{where} contains a NUL character")
    try:
        tree = _ENV.parse(text)
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
    for _line, kind, value in _ENV.lex(text):
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
