"""The nodes of a graph: an agent, an ensemble of agents or a shell command, each a
class, and the :data:`Node` union that picks the class from a node's JSON.

A node's kind is read from the fields it sets (:mod:`canopy.graphs.kinds`); a node that
mixes kinds is refused saying why, before any class sees it, and fields set to ``null``
count as not set. :func:`stored_node` reads a node back from the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Discriminator,
    Tag,
    TypeAdapter,
    ValidationInfo,
    model_validator,
)

from canopy.graphs.fields import (
    STRICT,
    MaxVisits,
    NodeName,
    NodeTimeout,
    Platform,
    StallMinutes,
    Text,
    check_effort,
    check_markers,
    not_empty,
    refuse_unknown_fields,
)
from canopy.graphs.kinds import AGENT_NODE, COMMAND_NODE, ENSEMBLE_NODE, given, node_kind
from canopy.graphs.markers import NODE_ENV_PREFIX, NODE_MARKERS
from canopy.limits import DEFAULT_MAX_VISITS
from canopy.permissions import OnDenial, Permissions


class AgentConfig(BaseModel):
    """One agent to launch: a platform with an optional model, effort and permission
    level (an ensemble member, or the agent of an agent node or hook)."""

    model_config = STRICT

    platform: Platform
    model: Text | None = None
    effort: Text | None = None
    permissions: Permissions | None = None
    """What the agent may do (:mod:`canopy.permissions`); unset: the nearer setting's."""

    @model_validator(mode="after")
    def _effort(self, info: ValidationInfo) -> AgentConfig:
        check_effort(info, self.platform, self.effort)
        return self


Ensemble = Annotated[list[AgentConfig], AfterValidator(not_empty)]


class _Step(BaseModel):
    """What every node has: its name and where the graph goes after it."""

    model_config = STRICT

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
        check_markers(info, self.prompt, None, NODE_MARKERS, NODE_ENV_PREFIX)
        check_effort(info, self.platform, self.effort)
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
        check_markers(info, self.prompt, None, NODE_MARKERS, NODE_ENV_PREFIX)
        return self


class CommandNode(_Step):
    """A node that is one shell command (markers reach it as ``CANOPY_*`` variables)."""

    command: Text

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> CommandNode:
        check_markers(info, None, self.command, NODE_MARKERS, NODE_ENV_PREFIX)
        return self


NODE_CLASSES: dict[type[BaseModel], str] = {
    AgentNode: AGENT_NODE,
    EnsembleNode: ENSEMBLE_NODE,
    CommandNode: COMMAND_NODE,
}
"""Each node class and its kind: the tag the :data:`Node` union picks it by."""


def _node_kind(data: Any) -> str | None:
    """The discriminator: a model's class, or :func:`~canopy.graphs.kinds.node_kind`.

    ``_one_node_kind`` has already refused every mix, so exactly one kind field is set.
    """
    if isinstance(data, BaseModel):
        return NODE_CLASSES.get(type(data))
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
    refuse_unknown_fields(data, *NODE_CLASSES)
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

NODE_ADAPTER: TypeAdapter[Node] = TypeAdapter(Node)


def stored_node(data: Mapping[str, Any]) -> Node:
    """A node as the store keeps it, typed (shape checked; content rules are for input)."""
    return NODE_ADAPTER.validate_python(data)
