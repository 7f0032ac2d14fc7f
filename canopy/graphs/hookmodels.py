"""The hooks of a graph: an agent, a shell command or a message to a live session, each
a class, the :data:`Hook` union that picks the class from a hook's JSON, and
:data:`Hooks`, the hooks keyed by event.

A hook's mode is read from the fields it sets (:mod:`canopy.graphs.kinds`); a hook that
mixes modes is refused saying why, before any class sees it. What is not one hook's
business (the legacy ``on_completed`` field, resolving ``spec_ids``) is in
:mod:`canopy.graphs.hooks`. :func:`stored_hook` reads a hook back from the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
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
    Platform,
    SessionId,
    SessionName,
    Text,
    check_effort,
    check_markers,
    input_rule,
    refuse_unknown_fields,
    within,
)
from canopy.graphs.hooks import HOOK_EVENTS
from canopy.graphs.kinds import AGENT_HOOK, COMMAND_HOOK, INTERACTIVE_HOOK, given, hook_mode
from canopy.graphs.markers import HOOK_ENV_PREFIX, HOOK_MARKERS
from canopy.limits import HOOK_TIMEOUT_MINUTES
from canopy.permissions import Permissions


def _names_a_spec(spec_ids: list[str]) -> list[str]:
    """An empty list would silently mean "never fire"; leaving the field out means "all"."""
    if not spec_ids:
        raise ValueError("must name at least one spec (omit spec_ids to fire for every spec)")
    return spec_ids


HookTimeout = Annotated[int | float, within(HOOK_TIMEOUT_MINUTES)]
"""``int | float`` rather than ``float`` so a stored hook keeps ``30`` as written, not
``30.0``: the config that fires (and is copied into the hook run) is the one stored."""
SpecIds = Annotated[list[Text], input_rule(_names_a_spec)]
"""The specs a per-spec hook fires for (full ids once stored); unset: every spec."""

HOOK_MODES = (
    "agent (platform + prompt), command (command) or "
    "interactive (prompt + target_session_id or target_session_name)"
)
_MODE_FIELDS = ("platform", "command", "target_session_id", "target_session_name")


class AgentHook(BaseModel):
    """A hook that launches an agent through the same platform adapters as nodes."""

    model_config = STRICT

    platform: Platform
    prompt: Text
    model: Text | None = None
    effort: Text | None = None
    permissions: Permissions | None = None
    timeout_minutes: HookTimeout | None = None
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> AgentHook:
        check_markers(info, self.prompt, None, HOOK_MARKERS, HOOK_ENV_PREFIX)
        check_effort(info, self.platform, self.effort)
        return self


class CommandHook(BaseModel):
    """A hook that is one shell command (markers reach it as ``CANOPY_HOOK_*`` variables)."""

    model_config = STRICT

    command: Text
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> CommandHook:
        check_markers(info, None, self.command, HOOK_MARKERS, HOOK_ENV_PREFIX)
        return self


class InteractiveHook(BaseModel):
    """A hook that enqueues its prompt for a live session, named by id or by name."""

    model_config = STRICT

    prompt: Text
    target_session_id: SessionId | None = None
    target_session_name: SessionName | None = None
    spec_ids: SpecIds | None = None

    @model_validator(mode="after")
    def _markers(self, info: ValidationInfo) -> InteractiveHook:
        check_markers(info, self.prompt, None, HOOK_MARKERS, HOOK_ENV_PREFIX)
        return self


HOOK_CLASSES: dict[type[BaseModel], str] = {
    AgentHook: AGENT_HOOK,
    CommandHook: COMMAND_HOOK,
    InteractiveHook: INTERACTIVE_HOOK,
}
"""Each hook class and its mode: the tag the :data:`Hook` union picks it by."""
_HOOK_OPTIONAL_FIELDS = (
    "platform", "prompt", "model", "effort", "permissions", "timeout_minutes", "command",
    "target_session_id", "target_session_name", "spec_ids",
)  # fmt: skip


def _hook_mode(data: Any) -> str | None:
    """The discriminator: a model's class, or :func:`~canopy.graphs.kinds.hook_mode`.

    ``_one_hook_mode`` has already refused every mix, so exactly one mode is set.
    """
    if isinstance(data, BaseModel):
        return HOOK_CLASSES.get(type(data))
    return hook_mode(data) if isinstance(data, Mapping) else None


def _one_hook_mode(data: Any) -> Any:
    """Refuse a hook that is not exactly one well-formed mode, saying why; drop fields
    set to ``null`` (always accepted as "not set") so each mode's class sees its own."""
    if not isinstance(data, Mapping):
        return data
    refuse_unknown_fields(data, *HOOK_CLASSES)
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

HOOK_ADAPTER: TypeAdapter[Hook] = TypeAdapter(Hook)


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
