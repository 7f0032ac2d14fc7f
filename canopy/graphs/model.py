"""The graph definition: nodes, transitions, ensembles, hooks and bound specs (DESIGN §5).

Pydantic models with unknown fields forbidden and no type coercion, so a typo such as
``modle`` or ``"max_visits": "3"`` is refused instead of silently ignored. Everything a
definition can get wrong on its own (shape, references between nodes and ensembles,
platforms, markers) is checked here; what needs the store (bound spec ids) is checked by
:mod:`canopy.ops.graphs`. :func:`validation_refusal` turns pydantic's multi-line report
into the one-line :class:`Refused` every front end prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from canopy.errors import Refused
from canopy.markers import NODE_MARKERS, check_template
from canopy.platforms import platform_names
from canopy.workdirs import normalize_workdir

DEFAULT_MAX_VISITS = 5
"""How often one node may run for one spec unless the node says otherwise."""

_STRICT = ConfigDict(extra="forbid", strict=True)
_Item = TypeVar("_Item")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _one_line(value: str) -> str:
    """Names are shown in tables and refusals, so they are one stripped line."""
    cleaned = _not_blank(value).strip()
    if "\n" in cleaned or "\r" in cleaned:
        raise ValueError("must be a single line")
    return cleaned


def _not_empty(items: list[_Item]) -> list[_Item]:
    if not items:
        raise ValueError("must not be empty")
    return items


def _known_platform(value: str) -> str:
    known = platform_names()
    if value not in known:
        raise ValueError(f"unknown platform {value!r}; known platforms: {', '.join(known)}")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]
Platform = Annotated[str, AfterValidator(_known_platform)]
# The lengths match the store's columns (graphs.name, node_runs.node).
GraphName = Annotated[str, Field(max_length=400), AfterValidator(_one_line)]
NodeName = Annotated[str, Field(max_length=200), AfterValidator(_one_line)]
Workdir = Annotated[str, AfterValidator(_not_blank), AfterValidator(normalize_workdir)]


class AgentConfig(BaseModel):
    """One member of an ensemble: a platform with an optional model and effort."""

    model_config = _STRICT

    platform: Platform
    model: Text | None = None
    effort: Text | None = None


Ensemble = Annotated[list[AgentConfig], AfterValidator(_not_empty)]


class Node(BaseModel):
    """One step of a graph: an agent (platform or ensemble + prompt) or a shell command."""

    model_config = _STRICT

    name: NodeName
    platform: Platform | None = None
    ensemble: Text | None = None
    prompt: Text | None = None
    model: Text | None = None
    effort: Text | None = None
    command: Text | None = None
    next: Text | None = None
    on_failure: Text | None = None
    max_visits: int = Field(default=DEFAULT_MAX_VISITS, ge=1)
    timeout_minutes: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _well_formed(self) -> Node:
        problem = _kind_problem(self) or _template_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self


def _kind_problem(node: Node) -> str | None:
    """Why ``node`` is neither exactly an agent node nor exactly a command node, if it is."""
    agent = node.platform is not None or node.ensemble is not None
    if node.platform is not None and node.ensemble is not None:
        return "give platform or ensemble, not both"
    if agent and node.command is not None:
        return "a node is an agent (platform or ensemble) or a command, not both"
    if not agent and node.command is None:
        return "needs platform or ensemble (an agent node) or command (a command node)"
    if agent and node.prompt is None:
        return "an agent node needs a prompt"
    if node.command is not None and node.prompt is not None:
        return "a command node takes no prompt; the command is the whole step"
    if node.platform is None and (node.model is not None or node.effort is not None):
        return "model and effort apply to platform nodes only (ensemble members carry their own)"
    return None


def _template_problem(node: Node) -> str | None:
    """The marker refusal for the node's prompt or command, if any."""
    for where, text in (("prompt", node.prompt), ("command", node.command)):
        if text is None:
            continue
        try:
            check_template(text, NODE_MARKERS, where)
        except Refused as refusal:
            return refusal.message
    return None


class GraphDefinition(BaseModel):
    """A whole graph as written in a JSON or TOML file (and as ``graph_edit`` merges it)."""

    model_config = _STRICT

    name: GraphName
    workdir: Workdir | None = None
    allow_dirty_start: bool = False
    nodes: Annotated[list[Node], AfterValidator(_not_empty)]
    ensembles: dict[str, Ensemble] = Field(default_factory=dict)
    hooks: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    specs: list[Text] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> GraphDefinition:
        problem = _graph_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self


def _graph_problem(graph: GraphDefinition) -> str | None:
    """The first cross-reference problem: hooks, duplicate names, unknown targets."""
    if graph.hooks:
        return "hooks are not supported yet"
    names = [node.name for node in graph.nodes]
    duplicates = [name for name, count in Counter(names).items() if count > 1]
    if duplicates:
        return f"duplicate node name {duplicates[0]!r}"
    for node in graph.nodes:
        problem = _reference_problem(node, names, graph.ensembles)
        if problem is not None:
            return f"node {node.name}: {problem}"
    return None


def _reference_problem(
    node: Node, names: list[str], ensembles: Mapping[str, list[AgentConfig]]
) -> str | None:
    if node.ensemble is not None and node.ensemble not in ensembles:
        defined = ", ".join(ensembles) or "(none defined)"
        return f"unknown ensemble {node.ensemble!r}; ensembles: {defined}"
    for field, target in (("next", node.next), ("on_failure", node.on_failure)):
        if target is not None and target not in names:
            return f"{field} names unknown node {target!r}; nodes: {', '.join(names)}"
    return None


def validate_definition(data: Mapping[str, Any]) -> GraphDefinition:
    """``data`` as a checked definition, or one :class:`Refused` line naming the problem."""
    try:
        return GraphDefinition.model_validate(dict(data))
    except ValidationError as error:
        raise validation_refusal(error, data) from None


def validation_refusal(error: ValidationError, data: object, what: str = "graph") -> Refused:
    """Pydantic's report as one line: the first problem with its field path, plus a count.

    ``data`` is the input that failed; it lets a path into ``nodes`` name the node.
    """
    more = error.error_count() - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return Refused(f"{what} definition refused: {_describe(error.errors()[0], data)}{tail}")


def _describe(error: ErrorDetails, data: object) -> str:
    loc = error["loc"]
    path = _path(loc) + _node_hint(loc, data)
    if error["type"] == "extra_forbidden":
        return f"unknown field {path}"
    if error["type"] == "missing":
        return f"{path} is required"
    context = error.get("ctx") or {}
    message = str(context["error"]) if error["type"] == "value_error" else error["msg"]
    return f"{path}: {message}" if path else message


def _path(loc: tuple[int | str, ...]) -> str:
    """``('nodes', 1, 'platform')`` → ``nodes[1].platform``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _node_hint(loc: tuple[int | str, ...], data: object) -> str:
    """`` (node test)`` when ``loc`` points into a node that has a readable name."""
    if len(loc) < 2 or loc[0] != "nodes" or not isinstance(loc[1], int):
        return ""
    nodes = data.get("nodes") if isinstance(data, Mapping) else None
    if not isinstance(nodes, list) or not 0 <= loc[1] < len(nodes):
        return ""
    node = nodes[loc[1]]
    name = node.get("name") if isinstance(node, Mapping) else None
    return f" (node {name})" if isinstance(name, str) and name.strip() else ""
