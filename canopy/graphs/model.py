"""The graph definition: nodes, transitions, ensembles, hooks and bound specs, checked
whole, and its refusals as one line.

The parts are checked by their own models (:mod:`canopy.graphs.nodemodels`,
:mod:`canopy.graphs.hookmodels`, on the shared rules of :mod:`canopy.graphs.fields`);
:class:`GraphDefinition` puts them together and checks what only the whole can get
wrong: references between nodes and ensembles, duplicate names, ``spec_ids`` on an event
that does not fire per spec. What needs the store (bound spec ids, hooks' ``spec_ids``)
is checked by :mod:`canopy.ops.graphs`. :func:`validation_refusal` turns pydantic's
multi-line report into the one-line :class:`Refused` every front end prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from canopy.errors import Refused
from canopy.graphs.fields import (
    ACCEPTING_INPUT,
    STRICT,
    UNKNOWN_FIELD,
    BudgetTokens,
    BudgetUsd,
    EnsembleName,
    GraphName,
    HostName,
    Lanes,
    NodeName,
    Text,
    Workdir,
    not_empty,
)
from canopy.graphs.hookmodels import HOOK_CLASSES, Hook, Hooks
from canopy.graphs.hooks import SPEC_EVENTS, fold_legacy_on_completed
from canopy.graphs.nodemodels import NODE_CLASSES, AgentConfig, Ensemble, EnsembleNode, Node
from canopy.lanes import IntegrationMode
from canopy.limits import nesting_problem
from canopy.permissions import Permissions

_UNION_TAGS = frozenset({*NODE_CLASSES.values(), *HOOK_CLASSES.values()})
"""Pydantic puts the chosen tag in an error's location; a refusal's path leaves it out."""


class BudgetLimits(BaseModel):
    """The most a run, or a spec in it, may spend: USD, tokens, or both."""

    model_config = STRICT

    usd: BudgetUsd | None = None
    tokens: BudgetTokens | None = None

    @model_validator(mode="after")
    def _some(self) -> BudgetLimits:
        if self.usd is None and self.tokens is None:
            raise ValueError("set usd, tokens or both")
        return self


class GraphBudget(BaseModel):
    """A graph's ``budget``: limits per run and per spec (:mod:`canopy.budget`)."""

    model_config = STRICT

    run: BudgetLimits | None = None
    spec: BudgetLimits | None = None

    @model_validator(mode="after")
    def _some(self) -> GraphBudget:
        if self.run is None and self.spec is None:
            raise ValueError("set run, spec or both (or null for no budget)")
        return self

    def stored(self) -> dict[str, Any]:
        """The budget as the store keeps it: the limits set, nothing else."""
        return self.model_dump(exclude_none=True)


class GraphDefinition(BaseModel):
    """A whole graph as written in a JSON or TOML file (and as ``graph_edit`` merges it)."""

    model_config = STRICT

    name: GraphName
    workdir: Workdir | None = None
    host: HostName | None = None
    allow_dirty_start: bool = False
    lanes: Lanes = 1
    """How many specs a run works on at once (:mod:`canopy.lanes`); 1: one after another."""
    integration: IntegrationMode = "rebase"
    """How a run of lanes lands a spec's work on the target: rebased and fast-forwarded,
    or as a merge commit."""
    conflict_resolver: NodeName | None = None
    """The node a run of lanes sends a spec whose work conflicts with the target to, once,
    before it pauses; it runs only when sent to (none: a conflict pauses the run)."""
    permissions: Permissions | None = None
    """The level its agents run at where a node, member or hook does not say."""
    budget: GraphBudget | None = None
    """What a run and each spec in it may spend before the run pauses (none: no limit)."""
    nodes: Annotated[list[Node], AfterValidator(not_empty)]
    ensembles: dict[EnsembleName, Ensemble] = Field(default_factory=dict)
    hooks: Hooks = Field(default_factory=dict)
    specs: list[Text] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _legacy_on_completed(cls, data: Any) -> Any:
        """The old top-level ``on_completed`` object becomes one more on_completed hook."""
        return fold_legacy_on_completed(data)

    @model_validator(mode="after")
    def _consistent(self) -> GraphDefinition:
        problem = _graph_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    def stored_hooks(self) -> dict[str, list[dict[str, Any]]]:
        """The hooks as the store keeps them: as written, unset fields left out.

        An event with no hooks is dropped, which is how ``"on_failed": []`` clears it.
        """
        return {
            event: [hook.model_dump(exclude_none=True) for hook in hooks]
            for event, hooks in self.hooks.items()
            if hooks
        }


def _graph_problem(graph: GraphDefinition) -> str | None:
    """The first cross-reference problem: hook events, duplicate names, unknown targets."""
    problem = _spec_ids_problem(graph.hooks)
    if problem is not None:
        return problem
    names = [node.name for node in graph.nodes]
    duplicates = [name for name, count in Counter(names).items() if count > 1]
    if duplicates:
        return f"duplicate node name {duplicates[0]!r}"
    for node in graph.nodes:
        problem = _reference_problem(node, names, graph.ensembles)
        if problem is not None:
            return f"node {node.name}: {problem}"
    resolver = graph.conflict_resolver
    if resolver is not None and resolver not in names:
        return f"conflict_resolver names unknown node {resolver!r}; nodes: {', '.join(names)}"
    return None


def _spec_ids_problem(hooks: Mapping[str, list[Hook]]) -> str | None:
    """``spec_ids`` on an event that does not fire per spec, if any hook has that."""
    for event, event_hooks in hooks.items():
        if event in SPEC_EVENTS:
            continue
        for index, hook in enumerate(event_hooks):
            if hook.spec_ids is not None:
                return (
                    f"hooks.{event}[{index}]: spec_ids is refused on {event}: it is not a "
                    f"per-spec event; spec_ids apply to {' and '.join(SPEC_EVENTS)} only"
                )
    return None


def _reference_problem(
    node: Node, names: list[str], ensembles: Mapping[str, list[AgentConfig]]
) -> str | None:
    if isinstance(node, EnsembleNode) and node.ensemble not in ensembles:
        defined = ", ".join(ensembles) or "(none defined)"
        return f"unknown ensemble {node.ensemble!r}; ensembles: {defined}"
    for field, target in (("next", node.next), ("on_failure", node.on_failure)):
        if target is not None and target not in names:
            return f"{field} names unknown node {target!r}; nodes: {', '.join(names)}"
    return None


def validate_definition(data: Mapping[str, Any]) -> GraphDefinition:
    """``data`` as a checked definition, or one :class:`Refused` line naming the problem.

    Nesting is checked first, without recursion: validating (or storing, or printing) a
    structure thousands of levels deep would hit Python's recursion limit instead.
    """
    problem = nesting_problem(data)
    if problem is not None:
        raise Refused(f"graph definition refused: {problem}")
    try:
        return GraphDefinition.model_validate(dict(data), context=ACCEPTING_INPUT)
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
    if error["type"] == UNKNOWN_FIELD:
        loc = (*loc, str((error.get("ctx") or {})["field"]))
    path = _path(loc) + _node_hint(loc, data)
    if error["type"] in ("extra_forbidden", UNKNOWN_FIELD):
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
        if part in _UNION_TAGS:
            continue
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
