"""How a graph run walks one spec: the plan it starts from, where each node leads, how the
spec's passage ended, and how a node launch is bounded and retried.

Values and pure rules, which the workflow (:mod:`canopy.workflows.graph_run`) applies;
nothing here calls Temporal but :func:`continue_as_new_due`, which reads the workflow's
own info.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from canopy.contracts.graph_run import (
        Ahead,
        NextSpec,
        NodeResult,
        NodeStep,
        RunInput,
        node_timeout_minutes,
    )
    from canopy.contracts.graph_run_blocker import Budget
    from canopy.contracts.graph_run_signals import ContinueMode
    from canopy.workdir import WorktreeState

DEFAULT_NODE_TIMEOUT_MINUTES = 24 * 60
"""Activity deadline for a node without ``timeout_minutes`` (the node itself runs unbounded)."""
NODE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
    non_retryable_error_types=["Refused"],
)
"""Retries cover lost workers (heartbeat timeouts); an agent's own failure is a result."""


@dataclass(frozen=True)
class HarnessSession:
    """The harness's own conversation (its session id, e.g. Claude Code's ``session_id``)
    and the platform that owns it: only that platform can resume it. Not an interactive
    session of Canopy's."""

    id: str
    platform: str


@dataclass
class Plan:
    """What to do with the next spec: run it (from ``node``, resuming ``harness_session``)
    or skip it. ``spec`` ``None`` means: read the next spec fresh from the store."""

    spec: NextSpec | None = None
    node: str | None = None
    harness_session: HarnessSession | None = None
    skip: bool = False
    guarded: bool = True
    """Whether the dirty-tree guard still has to pass (a directed start skips it)."""
    mode: ContinueMode | None = None
    """The ``continue_run`` mode the plan came from (a run of lanes tells a recheck from a
    directed start by it)."""


TAKEN = "taken"
"""The :class:`SpecEnd` outcome of a spec another run claimed first: no passage opened."""
DIRTY = "dirty"
"""The :class:`SpecEnd` outcome of a spec the dirty-tree guard kept from starting."""
BUDGET = "budget"
"""The :class:`SpecEnd` outcome of a spec whose next node the graph's budget kept back."""


@dataclass
class SpecEnd:
    """How one spec's passage ended."""

    outcome: str
    node: str | None = None
    harness_session: HarnessSession | None = None
    resume_at: datetime | None = None
    limit: str | None = None
    """For a usage limit: the harness's message and the reset chosen from it."""
    dirty: WorktreeState | None = None
    """The tree the guard found dirty (:data:`DIRTY`)."""
    budget: Budget | None = None
    """The limit reached (:data:`BUDGET`)."""
    guarded: bool = False
    """For :data:`BUDGET`: whether the dirty-tree guard is still to run for the spec (no
    node of it launched yet)."""
    opened: bool = True
    """For :data:`BUDGET`: whether a node of the spec launched (its passage is open, to
    close); a budget reached before the first launch leaves nothing to close."""
    ahead: Ahead | None = None
    """What runs next, when it was read as the spec closed."""


def where_next(step: NodeStep, result: NodeResult) -> SpecEnd | str:
    """After a node ran: how the spec's passage ends there, or the name of the node it goes
    on to (``next`` on success, ``on_failure`` on failure). An interrupted or limited node
    hands its harness session over, so the spec can resume it."""
    produced = (
        HarnessSession(result.harness_session_id, result.platform)
        if result.harness_session_id and result.platform
        else None
    )
    if result.status == "interrupted":
        return SpecEnd("interrupted", step.name, produced)
    if result.status == "limit_blocked":
        return SpecEnd(
            "limit_blocked", step.name, produced, result.limit_reset_at, limit=result.error
        )
    if result.status == "succeeded":
        return step.next_node if step.next_node is not None else SpecEnd("completed", step.name)
    return step.on_failure if step.on_failure is not None else SpecEnd("failed", step.name)


def node_activity_timeout(step: NodeStep) -> timedelta:
    """The node activity's deadline: the node's own timeout (clamped here too: a timedelta
    of an absurd float raises, failing every task), plus a minute to report."""
    minutes = node_timeout_minutes(step.timeout_minutes) or DEFAULT_NODE_TIMEOUT_MINUTES
    return timedelta(minutes=minutes + 1)


def continue_as_new_due(start: RunInput, specs_this_execution: int) -> bool:
    """Whether the execution continues as new after ``specs_this_execution`` specs."""
    return (
        specs_this_execution >= start.specs_per_execution
        or workflow.info().is_continue_as_new_suggested()
    )
