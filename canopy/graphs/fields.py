"""The field types and content rules every part of a graph definition shares.

Pydantic models with unknown fields forbidden and no type coercion (:data:`STRICT`), so a
typo such as ``modle`` or ``"max_visits": "3"`` is refused instead of silently ignored.
The content rules (names, text, ranges, known platforms and efforts, markers; the limits
and name rules of :mod:`canopy.limits`) are written once here, as annotated types and
checks the node, hook and graph models use, and apply only to a definition a user hands
in (:data:`ACCEPTING_INPUT`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo
from pydantic_core import PydanticCustomError

from canopy.errors import Refused
from canopy.graphs.markers import check_command, check_template
from canopy.limits import (
    BUDGET_TOKENS,
    BUDGET_USD,
    ENSEMBLE_NAME_MAX_LENGTH,
    HOST_MAX_LENGTH,
    ID_MAX_LENGTH,
    LANES,
    MAX_VISITS,
    NAME_MAX_LENGTH,
    NODE_NAME_MAX_LENGTH,
    NODE_TIMEOUT_MINUTES,
    SESSION_NAME_MAX_LENGTH,
    STALL_MINUTES,
    TEXT_MAX_LENGTH,
    Range,
    name_problem,
    range_problem,
    text_problem,
)
from canopy.workdir import normalize_workdir

STRICT = ConfigDict(extra="forbid", strict=True)
"""Every model's configuration: unknown fields and type coercion refused."""
_Item = TypeVar("_Item")
_Number = TypeVar("_Number", int, float)

ACCEPTING_INPUT: dict[str, Any] = {"accepting_input": True}
"""Validation context for a definition a user hands in. The content rules (names, text,
ranges, known platforms, markers) apply only then: a graph stored before a rule was
tightened, read back by an activity or carried in a workflow's payload, must still load,
and a workflow must not read this machine's platform config while it replays."""


def _accepting_input(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("accepting_input"))


def input_rule(check: Callable[[_Item], _Item]) -> AfterValidator:
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

    return input_rule(check)


def within(bounds: Range) -> AfterValidator:
    """A number field kept inside ``bounds`` (finite: NaN and infinities never are)."""

    def check(value: _Number) -> _Number:
        problem = range_problem(value, bounds)
        if problem is not None:
            raise ValueError(problem)
        return value

    return input_rule(check)


def _workdir(value: str) -> str:
    """:func:`normalize_workdir`, its refusal reported at the field like any other."""
    try:
        return normalize_workdir(value)
    except Refused as refusal:
        raise ValueError(refusal.message.removeprefix("workdir ")) from None


def not_empty(items: list[_Item]) -> list[_Item]:
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


Text = Annotated[str, input_rule(_not_blank), input_rule(_storable)]
Platform = Annotated[str, input_rule(_known_platform)]
GraphName = Annotated[str, _named(NAME_MAX_LENGTH)]
NodeName = Annotated[str, _named(NODE_NAME_MAX_LENGTH, path_safe=True)]
"""Path-safe: a node's name may end up in a file name (logs) or on a command line."""
EnsembleName = Annotated[str, _named(ENSEMBLE_NAME_MAX_LENGTH)]
SessionName = Annotated[str, _named(SESSION_NAME_MAX_LENGTH)]
SessionId = Annotated[str, _named(ID_MAX_LENGTH)]
Workdir = Annotated[str, input_rule(_workdir)]
HostName = Annotated[str, _named(HOST_MAX_LENGTH, path_safe=True)]
"""Path-safe, as :func:`canopy.temporal.client.check_host` has it: part of a task queue
name and of shell hints."""
MaxVisits = Annotated[int, within(MAX_VISITS)]
Lanes = Annotated[int, within(LANES)]
NodeTimeout = Annotated[int | float, within(NODE_TIMEOUT_MINUTES)]
"""``int | float``: an integer too large for a float is then refused by its range, naming
the value, instead of as "not a valid number"."""
StallMinutes = Annotated[int | float, within(STALL_MINUTES)]
BudgetUsd = Annotated[float, within(BUDGET_USD)]
BudgetTokens = Annotated[int, within(BUDGET_TOKENS)]


def check_effort(info: ValidationInfo, platform: str, effort: str | None) -> None:
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


def check_markers(
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


UNKNOWN_FIELD = "unknown_field"


def refuse_unknown_fields(data: Mapping[str, Any], *kinds: type[BaseModel]) -> None:
    """A field no kind has is reported as such, before the kind is worked out: a typo
    (``comand``) is the problem to name, not the missing kind it leads to."""
    known = {name for kind in kinds for name in kind.model_fields}
    unknown = next((key for key in data if key not in known), None)
    if unknown is not None:
        raise PydanticCustomError(UNKNOWN_FIELD, "unknown field {field}", {"field": unknown})
