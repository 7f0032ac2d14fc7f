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
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from canopy.errors import Refused
from canopy.graphs.hooks import HOOK_EVENTS, SPEC_EVENTS, fold_legacy_on_completed
from canopy.graphs.kinds import (
    AGENT_HOOK,
    AGENT_NODE,
    COMMAND_HOOK,
    COMMAND_NODE,
    ENSEMBLE_NODE,
    INTERACTIVE_HOOK,
    given,
    hook_mode,
    node_kind,
)
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
    HOST_MAX_LENGTH,
    ID_MAX_LENGTH,
    MAX_VISITS,
    NAME_MAX_LENGTH,
    NODE_NAME_MAX_LENGTH,
    NODE_TIMEOUT_MINUTES,
    SESSION_NAME_MAX_LENGTH,
    STALL_MINUTES,
    TEXT_MAX_LENGTH,
    Range,
    name_problem,
    nesting_problem,
    range_problem,
    text_problem,
)
from canopy.permissions import OnDenial, Permissions
from canopy.workdir import normalize_workdir

_STRICT = ConfigDict(extra="forbid", strict=True)
_Item = TypeVar("_Item")
_Number = TypeVar("_Number", int, float)

ACCEPTING_INPUT: dict[str, Any] = {"accepting_input": True}
"""Validation context for a definition a user hands in. The content rules (names, text,
ranges, known platforms, markers) apply only then: a graph stored before a rule was
tightened, read back by an activity or carried in a workflow's payload, must still load,
and a workflow must not read this machine's platform config while it replays."""


def _accepting_input(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("accepting_input"))


def _input_rule(check: Callable[[_Item], _Item]) -> AfterValidator:
    """A content rule: applied to definitions being accepted (:data:`ACCEPTING_INPUT`)."""

    def apply(value: _Item, info: ValidationInfo) -> _Item:
        return check(value) if _accepting_input(info) else value

    return AfterValidator(apply)


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

    return _input_rule(check)


def _within(bounds: Range) -> AfterValidator:
    """A number field kept inside ``bounds`` (finite: NaN and infinities never are)."""

    def check(value: _Number) -> _Number:
        problem = range_problem(value, bounds)
        if problem is not None:
            raise ValueError(problem)
        return value

    return _input_rule(check)


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
    # Imported here: reading a stored graph (graph info) checks no platform, and the
    # registry imports every adapter and the platform config.
    from canopy.platforms import platform_names

    known = platform_names()
    if value not in known:
        raise ValueError(f"unknown platform {value!r}; known platforms: {', '.join(known)}")
    return value


Text = Annotated[str, _input_rule(_not_blank), _input_rule(_storable)]
Platform = Annotated[str, _input_rule(_known_platform)]
GraphName = Annotated[str, _named(NAME_MAX_LENGTH)]
NodeName = Annotated[str, _named(NODE_NAME_MAX_LENGTH, path_safe=True)]
"""Path-safe: a node's name may end up in a file name (logs) or on a command line."""
EnsembleName = Annotated[str, _named(ENSEMBLE_NAME_MAX_LENGTH)]
SessionName = Annotated[str, _named(SESSION_NAME_MAX_LENGTH)]
SessionId = Annotated[str, _named(ID_MAX_LENGTH)]
Workdir = Annotated[str, _input_rule(_workdir)]
HostName = Annotated[str, _named(HOST_MAX_LENGTH, path_safe=True)]
"""Path-safe, as :func:`canopy.temporal.client.check_host` has it: part of a task queue
name and of shell hints."""
MaxVisits = Annotated[int, _within(MAX_VISITS)]
NodeTimeout = Annotated[int | float, _within(NODE_TIMEOUT_MINUTES)]
"""``int | float``: an integer too large for a float is then refused by its range, naming
the value, instead of as "not a valid number"."""
StallMinutes = Annotated[int | float, _within(STALL_MINUTES)]


def _check_effort(info: ValidationInfo, platform: str, effort: str | None) -> None:
    """Refuse an effort the platform's CLI does not take, where the adapter names the ones
    it takes (Claude Code only warns, in a log nobody reads overnight). A content rule."""
    if effort is None or not _accepting_input(info):
        return
    from canopy.platforms import get_platform

    try:
        known = get_platform(platform).efforts
    except Refused:
        return  # the platform itself is refused, by its own field's rule
    if known is not None and effort.lower() not in known:
        raise ValueError(f"effort {effort!r} is not one {platform} takes ({', '.join(known)})")


class AgentConfig(BaseModel):
    """One agent to launch: a platform with an optional model, effort and permission
    level (an ensemble member, or the agent of an agent node or hook)."""

    model_config = _STRICT

    platform: Platform
    model: Text | None = None
    effort: Text | None = None
    permissions: Permissions | None = None
    """What the agent may do (:mod:`canopy.permissions`); unset: the nearer setting's."""

    @model_validator(mode="after")
    def _effort(self, info: ValidationInfo) -> AgentConfig:
        _check_effort(info, self.platform, self.effort)
        return self


Ensemble = Annotated[list[AgentConfig], AfterValidator(_not_empty)]


class _Step(BaseModel):
    """What every node has: its name and where the graph goes after it."""

    model_config = _STRICT

    name: NodeName
    next: Text | None = None
    on_failure: Text | None = None
    max_visits: MaxVisits = DEFAULT_MAX_VISITS
    timeout_minutes: NodeTimeout | None = None


class _AgentStep(_Step):
    """What every agent node has besides: how long its agent may print nothing, what it
    may do, and what a refusal of it counts as.

    ``stall_minutes`` ``None`` takes the config file's default (60 minutes unless it says
    otherwise); ``0`` turns the check off. A stalled agent is killed and its node run ends
    ``stalled``. ``permissions`` unset takes the graph's, then the platform's, then
    ``workspace``. ``on_denial`` unset is ``warn``: denials are recorded and shown, and
    the run's exit decides; ``fail`` makes a run with any denial a failed node run.
    """

    stall_minutes: StallMinutes | None = None
    permissions: Permissions | None = None
    on_denial: OnDenial | None = None


class AgentNode(_AgentStep):
    """A node run by one agent platform (with an optional model and effort)."""

    platform: Platform
    prompt: Text
    model: Text | None = None
    effort: Text | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> AgentNode:
        _check_markers(info, self.prompt, None, NODE_MARKERS, NODE_ENV_PREFIX)
        _check_effort(info, self.platform, self.effort)
        return self

    @property
    def agent(self) -> AgentConfig:
        """The one agent this node launches."""
        return AgentConfig(
            platform=self.platform,
            model=self.model,
            effort=self.effort,
            permissions=self.permissions,
        )


class EnsembleNode(_AgentStep):
    """A node run by the first member of a named ensemble that is not usage-limited."""

    ensemble: Text
    prompt: Text

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> EnsembleNode:
        _check_markers(info, self.prompt, None, NODE_MARKERS, NODE_ENV_PREFIX)
        return self


class CommandNode(_Step):
    """A node that is one shell command (markers reach it as ``CANOPY_*`` variables)."""

    command: Text

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> CommandNode:
        _check_markers(info, None, self.command, NODE_MARKERS, NODE_ENV_PREFIX)
        return self


def _check_markers(
    info: ValidationInfo,
    prompt: str | None,
    command: str | None,
    allowed: Sequence[str],
    env_prefix: str,
) -> None:
    """Refuse a marker not in ``allowed`` in the prompt, else in the command, or one in
    the command with no safe shell rendering (values reach commands as
    ``<env_prefix><NAME>`` variables). A content rule: input only."""
    if not _accepting_input(info):
        return
    try:
        if prompt is not None:
            check_template(prompt, allowed, "prompt")
        if command is not None:
            check_command(command, allowed, "command", env_prefix=env_prefix)
    except Refused as refusal:
        raise ValueError(refusal.message) from None


_NODE_CLASSES: dict[type[BaseModel], str] = {
    AgentNode: AGENT_NODE,
    EnsembleNode: ENSEMBLE_NODE,
    CommandNode: COMMAND_NODE,
}


_UNKNOWN_FIELD = "unknown_field"


def _refuse_unknown_fields(data: Mapping[str, Any], *kinds: type[BaseModel]) -> None:
    """A field no kind has is reported as such, before the kind is worked out: a typo
    (``comand``) is the problem to name, not the missing kind it leads to."""
    known = {name for kind in kinds for name in kind.model_fields}
    unknown = next((key for key in data if key not in known), None)
    if unknown is not None:
        raise PydanticCustomError(_UNKNOWN_FIELD, "unknown field {field}", {"field": unknown})


def _node_kind(data: Any) -> str | None:
    """The discriminator: a model's class, or :func:`~canopy.graphs.kinds.node_kind`.

    ``_one_node_kind`` has already refused every mix, so exactly one kind field is set.
    """
    if isinstance(data, BaseModel):
        return _NODE_CLASSES.get(type(data))
    return node_kind(data) if isinstance(data, Mapping) else None


_NODE_OPTIONAL_FIELDS = (
    "platform", "ensemble", "prompt", "model", "effort", "command", "next", "on_failure",
    "timeout_minutes", "stall_minutes", "permissions", "on_denial",
)  # fmt: skip


def _one_node_kind(data: Any) -> Any:
    """Refuse a node that is not exactly one kind, saying why; drop fields set to
    ``null`` (always accepted as "not set") so each kind's class sees only its own."""
    if not isinstance(data, Mapping):
        return data
    _refuse_unknown_fields(data, *_NODE_CLASSES)
    platform, ensemble, command, prompt, model, effort, *agent_only = given(
        data, "platform", "ensemble", "command", "prompt", "model", "effort",
        "stall_minutes", "permissions", "on_denial",
    )  # fmt: skip
    agent = platform or ensemble
    problem = None
    if platform and ensemble:
        problem = "give platform or ensemble, not both"
    elif agent and command:
        problem = "a node is an agent (platform or ensemble) or a command, not both"
    elif not agent and not command:
        problem = "needs platform or ensemble (an agent node) or command (a command node)"
    elif agent and not prompt:
        problem = "an agent node needs a prompt"
    elif command and prompt:
        problem = "a command node takes no prompt; the command is the whole step"
    elif command and any(agent_only):
        problem = "stall_minutes, permissions and on_denial apply to agent nodes only"
    elif not platform and (model or effort):
        problem = "model and effort apply to platform nodes only (ensemble members carry their own)"
    if problem is not None:
        raise ValueError(problem)
    return {k: v for k, v in data.items() if v is not None or k not in _NODE_OPTIONAL_FIELDS}


Node = Annotated[
    Annotated[AgentNode, Tag(AGENT_NODE)]
    | Annotated[EnsembleNode, Tag(ENSEMBLE_NODE)]
    | Annotated[CommandNode, Tag(COMMAND_NODE)],
    Discriminator(
        _node_kind,
        custom_error_type="node_type",
        custom_error_message="Input should be a valid dictionary",
    ),
    BeforeValidator(_one_node_kind),
]
"""One step of a graph: an agent, an ensemble of agents, or a shell command."""


def _names_a_spec(spec_ids: list[str]) -> list[str]:
    """An empty list would silently mean "never fire"; leaving the field out means "all"."""
    if not spec_ids:
        raise ValueError("must name at least one spec (omit spec_ids to fire for every spec)")
    return spec_ids


HookTimeout = Annotated[int | float, _within(HOOK_TIMEOUT_MINUTES)]
"""``int | float`` rather than ``float`` so a stored hook keeps ``30`` as written, not
``30.0``: the config that fires (and is copied into the hook run) is the one stored."""
SpecIds = Annotated[list[Text], _input_rule(_names_a_spec)]
"""The specs a per-spec hook fires for (full ids once stored); unset: every spec."""

HOOK_MODES = (
    "agent (platform + prompt), command (command) or "
    "interactive (prompt + target_session_id or target_session_name)"
)
_MODE_FIELDS = ("platform", "command", "target_session_id", "target_session_name")


class AgentHook(BaseModel):
    """A hook that launches an agent through the same platform adapters as nodes."""

    model_config = _STRICT

    platform: Platform
    prompt: Text
    model: Text | None = None
    effort: Text | None = None
    permissions: Permissions | None = None
    timeout_minutes: HookTimeout | None = None
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> AgentHook:
        _check_markers(info, self.prompt, None, HOOK_MARKERS, HOOK_ENV_PREFIX)
        _check_effort(info, self.platform, self.effort)
        return self


class CommandHook(BaseModel):
    """A hook that is one shell command (markers reach it as ``CANOPY_HOOK_*`` variables)."""

    model_config = _STRICT

    command: Text
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> CommandHook:
        _check_markers(info, None, self.command, HOOK_MARKERS, HOOK_ENV_PREFIX)
        return self


class InteractiveHook(BaseModel):
    """A hook that enqueues its prompt for a live session, named by id or by name."""

    model_config = _STRICT

    prompt: Text
    target_session_id: SessionId | None = None
    target_session_name: SessionName | None = None
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> InteractiveHook:
        _check_markers(info, self.prompt, None, HOOK_MARKERS, HOOK_ENV_PREFIX)
        return self


_HOOK_CLASSES: dict[type[BaseModel], str] = {
    AgentHook: AGENT_HOOK,
    CommandHook: COMMAND_HOOK,
    InteractiveHook: INTERACTIVE_HOOK,
}
_HOOK_OPTIONAL_FIELDS = (
    "platform", "prompt", "model", "effort", "permissions", "timeout_minutes", "command",
    "target_session_id", "target_session_name", "spec_ids",
)  # fmt: skip


def _hook_mode(data: Any) -> str | None:
    """The discriminator: a model's class, or :func:`~canopy.graphs.kinds.hook_mode`.

    ``_one_hook_mode`` has already refused every mix, so exactly one mode is set.
    """
    if isinstance(data, BaseModel):
        return _HOOK_CLASSES.get(type(data))
    return hook_mode(data) if isinstance(data, Mapping) else None


def _one_hook_mode(data: Any) -> Any:
    """Refuse a hook that is not exactly one well-formed mode, saying why; drop fields
    set to ``null`` (always accepted as "not set") so each mode's class sees its own."""
    if not isinstance(data, Mapping):
        return data
    _refuse_unknown_fields(data, *_HOOK_CLASSES)
    present = [field for field in _MODE_FIELDS if data.get(field) is not None]
    modes = {"interactive" if field.startswith("target_") else field for field in present}
    platform, command, by_id, by_name, prompt, *agent_only = given(
        data,
        "platform", "command", "target_session_id", "target_session_name", "prompt",
        "model", "effort", "permissions", "timeout_minutes",
    )  # fmt: skip
    problem = None
    if len(modes) != 1:
        found = " and ".join(present) if present else f"none of {', '.join(_MODE_FIELDS)}"
        problem = f"a hook has exactly one mode: {HOOK_MODES}; this one has {found}"
    elif not platform and any(agent_only):
        problem = "model, effort, permissions and timeout_minutes apply to agent hooks only"
    elif command and prompt:
        problem = "a command hook takes no prompt; the command is the whole hook"
    elif by_id and by_name:
        problem = "an interactive hook names exactly one of target_session_id / target_session_name"
    elif not command and not prompt:
        problem = f"{'an agent' if platform else 'an interactive'} hook needs a prompt"
    if problem is not None:
        raise ValueError(problem)
    return {k: v for k, v in data.items() if v is not None or k not in _HOOK_OPTIONAL_FIELDS}


Hook = Annotated[
    Annotated[AgentHook, Tag(AGENT_HOOK)]
    | Annotated[CommandHook, Tag(COMMAND_HOOK)]
    | Annotated[InteractiveHook, Tag(INTERACTIVE_HOOK)],
    Discriminator(
        _hook_mode,
        custom_error_type="hook_type",
        custom_error_message="Input should be a valid dictionary",
    ),
    BeforeValidator(_one_hook_mode),
]
"""One hook of one event: an agent, a command or an interactive message, never a mix.

The event a hook belongs to is the graph's business (which events take ``spec_ids``),
and so is resolving ``spec_ids`` prefixes, which needs the store (:mod:`canopy.ops.graphs`).
"""

_UNION_TAGS = frozenset({*_NODE_CLASSES.values(), *_HOOK_CLASSES.values()})
"""Pydantic puts the chosen tag in an error's location; a refusal's path leaves it out."""

NODE_ADAPTER: TypeAdapter[Node] = TypeAdapter(Node)
HOOK_ADAPTER: TypeAdapter[Hook] = TypeAdapter(Hook)


def stored_node(data: Mapping[str, Any]) -> Node:
    """A node as the store keeps it, typed (shape checked; content rules are for input)."""
    return NODE_ADAPTER.validate_python(data)


def stored_hook(data: Mapping[str, Any]) -> Hook:
    """A hook as the store keeps it (or a hook run copied it), typed."""
    return HOOK_ADAPTER.validate_python(data)


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
    host: HostName | None = None
    allow_dirty_start: bool = False
    permissions: Permissions | None = None
    """The level its agents run at where a node, member or hook does not say."""
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
    if error["type"] == _UNKNOWN_FIELD:
        loc = (*loc, str((error.get("ctx") or {})["field"]))
    path = _path(loc) + _node_hint(loc, data)
    if error["type"] in ("extra_forbidden", _UNKNOWN_FIELD):
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
