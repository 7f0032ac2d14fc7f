"""The graph definition: nodes, transitions, ensembles, hooks and bound specs (DESIGN §5).

Pydantic models with unknown fields forbidden and no type coercion, so a typo such as
``modle`` or ``"max_visits": "3"`` is refused instead of silently ignored. Everything a
definition can get wrong on its own (shape, references between nodes and ensembles,
platforms, markers, hook modes and events, and the ranges, sizes and name rules of
:mod:`canopy.limits`) is checked here; what needs the store (bound
spec ids, hooks' ``spec_ids``) is checked by :mod:`canopy.ops.graphs`.
:func:`validation_refusal` turns pydantic's multi-line report into the one-line
:class:`Refused` every front end prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from canopy.contracts.graph_run import HOOK_EVENTS
from canopy.errors import Refused
from canopy.graphs.hooks import SPEC_EVENTS, fold_legacy_on_completed
from canopy.graphs.markers import (
    HOOK_ENV_PREFIX,
    HOOK_MARKERS,
    NODE_ENV_PREFIX,
    NODE_MARKERS,
    check_command,
    check_template,
)
from canopy.limits import (
    DEFAULT_MAX_VISITS,
    ENSEMBLE_NAME_MAX_LENGTH,
    HOOK_TIMEOUT_MINUTES,
    ID_MAX_LENGTH,
    MAX_VISITS,
    NAME_MAX_LENGTH,
    NODE_NAME_MAX_LENGTH,
    NODE_TIMEOUT_MINUTES,
    SESSION_NAME_MAX_LENGTH,
    TEXT_MAX_LENGTH,
    Range,
    name_problem,
    nesting_problem,
    range_problem,
    text_problem,
)
from canopy.platforms import platform_names
from canopy.workdir import normalize_workdir

_STRICT = ConfigDict(extra="forbid", strict=True)
_Item = TypeVar("_Item")
_Number = TypeVar("_Number", int, float)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _storable(value: str) -> str:
    """Prompts and commands: no NUL (it ends argv strings), valid Unicode, bounded."""
    problem = text_problem(value, TEXT_MAX_LENGTH)
    if problem is not None:
        raise ValueError(problem)
    return value


def _named(max_length: int, path_safe: bool = False) -> AfterValidator:
    """A name field: :func:`canopy.limits.name_problem`'s rule, stored stripped."""

    def check(value: str) -> str:
        problem = name_problem(value, max_length, path_safe)
        if problem is not None:
            raise ValueError(problem)
        return value.strip()

    return AfterValidator(check)


def _within(bounds: Range) -> AfterValidator:
    """A number field kept inside ``bounds`` (finite: NaN and infinities never are)."""

    def check(value: _Number) -> _Number:
        problem = range_problem(value, bounds)
        if problem is not None:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


def _workdir(value: str) -> str:
    """:func:`normalize_workdir`, its refusal reported at the field like any other."""
    try:
        return normalize_workdir(value)
    except Refused as refusal:
        raise ValueError(refusal.message.removeprefix("workdir ")) from None


def _not_empty(items: list[_Item]) -> list[_Item]:
    if not items:
        raise ValueError("must not be empty")
    return items


def _known_platform(value: str) -> str:
    known = platform_names()
    if value not in known:
        raise ValueError(f"unknown platform {value!r}; known platforms: {', '.join(known)}")
    return value


Text = Annotated[str, AfterValidator(_not_blank), AfterValidator(_storable)]
Platform = Annotated[str, AfterValidator(_known_platform)]
GraphName = Annotated[str, _named(NAME_MAX_LENGTH)]
NodeName = Annotated[str, _named(NODE_NAME_MAX_LENGTH, path_safe=True)]
"""Path-safe: a node's name may end up in a file name (logs) or on a command line."""
EnsembleName = Annotated[str, _named(ENSEMBLE_NAME_MAX_LENGTH)]
SessionName = Annotated[str, _named(SESSION_NAME_MAX_LENGTH)]
SessionId = Annotated[str, _named(ID_MAX_LENGTH)]
Workdir = Annotated[str, AfterValidator(_workdir)]
MaxVisits = Annotated[int, _within(MAX_VISITS)]
NodeTimeout = Annotated[int | float, _within(NODE_TIMEOUT_MINUTES)]
"""``int | float``: an integer too large for a float is then refused by its range, naming
the value, instead of as "not a valid number"."""


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
    max_visits: MaxVisits = DEFAULT_MAX_VISITS
    timeout_minutes: NodeTimeout | None = None

    @model_validator(mode="after")
    def _well_formed(self) -> Node:
        problem = _kind_problem(self) or _marker_problem(
            self.prompt, self.command, NODE_MARKERS, NODE_ENV_PREFIX
        )
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


def _marker_problem(
    prompt: str | None, command: str | None, allowed: Sequence[str], env_prefix: str
) -> str | None:
    """The marker refusal for the prompt, else the command: a marker not in ``allowed``,
    or, in the command, one with no safe shell rendering (values reach commands as
    ``<env_prefix><NAME>`` variables)."""
    try:
        if prompt is not None:
            check_template(prompt, allowed, "prompt")
        if command is not None:
            check_command(command, allowed, "command", env_prefix=env_prefix)
    except Refused as refusal:
        return refusal.message
    return None


def _names_a_spec(spec_ids: list[str]) -> list[str]:
    """An empty list would silently mean "never fire"; leaving the field out means "all"."""
    if not spec_ids:
        raise ValueError("must name at least one spec (omit spec_ids to fire for every spec)")
    return spec_ids


HookTimeout = Annotated[int | float, _within(HOOK_TIMEOUT_MINUTES)]
"""``int | float`` rather than ``float`` so a stored hook keeps ``30`` as written, not
``30.0``: the config that fires (and is copied into the hook run) is the one stored."""

HOOK_MODES = (
    "agent (platform + prompt), command (command) or "
    "interactive (prompt + target_session_id or target_session_name)"
)
_MODE_FIELDS = ("platform", "command", "target_session_id", "target_session_name")


class Hook(BaseModel):
    """One hook of one event: an agent, a command or an interactive message, never a mix.

    The event a hook belongs to is the graph's business (which events take ``spec_ids``),
    and so is resolving ``spec_ids`` prefixes, which needs the store (:mod:`canopy.ops.graphs`).
    """

    model_config = _STRICT

    platform: Platform | None = None
    prompt: Text | None = None
    model: Text | None = None
    effort: Text | None = None
    timeout_minutes: HookTimeout | None = None
    command: Text | None = None
    target_session_id: SessionId | None = None
    target_session_name: SessionName | None = None
    spec_ids: Annotated[list[Text], AfterValidator(_names_a_spec)] | None = None

    @model_validator(mode="after")
    def _well_formed(self) -> Hook:
        problem = _hook_mode_problem(self) or _marker_problem(
            self.prompt, self.command, HOOK_MARKERS, HOOK_ENV_PREFIX
        )
        if problem is not None:
            raise ValueError(problem)
        return self


def _hook_mode_problem(hook: Hook) -> str | None:
    """Why ``hook`` is not exactly one well-formed mode, if it is not."""
    present = [field for field in _MODE_FIELDS if getattr(hook, field) is not None]
    modes = {"interactive" if field.startswith("target_") else field for field in present}
    if len(modes) != 1:
        found = " and ".join(present) if present else f"none of {', '.join(_MODE_FIELDS)}"
        return f"a hook has exactly one mode: {HOOK_MODES}; this one has {found}"
    agent_only = (hook.model, hook.effort, hook.timeout_minutes)
    if hook.platform is None and any(value is not None for value in agent_only):
        return "model, effort and timeout_minutes apply to agent hooks only"
    if hook.command is not None and hook.prompt is not None:
        return "a command hook takes no prompt; the command is the whole hook"
    if hook.target_session_id is not None and hook.target_session_name is not None:
        return "an interactive hook names exactly one of target_session_id / target_session_name"
    if hook.command is None and hook.prompt is None:
        kind = "an agent" if hook.platform is not None else "an interactive"
        return f"{kind} hook needs a prompt"
    return None


def _known_events(hooks: object) -> object:
    """Refuse an unknown event name before its hooks are looked at, listing the four."""
    if isinstance(hooks, Mapping):
        unknown = next((event for event in hooks if event not in HOOK_EVENTS), None)
        if unknown is not None:
            raise ValueError(f"unknown event {unknown!r}; events: {', '.join(HOOK_EVENTS)}")
    return hooks


Hooks = Annotated[dict[str, list[Hook]], BeforeValidator(_known_events)]


class GraphDefinition(BaseModel):
    """A whole graph as written in a JSON or TOML file (and as ``graph_edit`` merges it)."""

    model_config = _STRICT

    name: GraphName
    workdir: Workdir | None = None
    allow_dirty_start: bool = False
    nodes: Annotated[list[Node], AfterValidator(_not_empty)]
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
    if node.ensemble is not None and node.ensemble not in ensembles:
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
