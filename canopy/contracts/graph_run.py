"""The GraphRunV2 workflow's contract: its type name, signals, query and payloads.

Small on purpose: ids, names, paths and outcomes — never agent output (that goes to log
files under the data dir). Pydantic models, carried by the pydantic data converter.
"""

import json
import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from canopy.budget import BudgetState
from canopy.contracts.graph_run_blocker import Blocker
from canopy.contracts.graph_run_signals import CONTROL_SIGNALS, ContinueMode
from canopy.contracts.graph_run_signals import SIGNAL_CONTINUE as SIGNAL_CONTINUE  # re-exported
from canopy.contracts.graph_run_signals import SIGNAL_PAUSE as SIGNAL_PAUSE
from canopy.contracts.graph_run_signals import SIGNAL_RESET as SIGNAL_RESET
from canopy.contracts.graph_run_signals import SIGNAL_SKIP_NEXT_SPEC as SIGNAL_SKIP_NEXT_SPEC
from canopy.contracts.graph_run_signals import SIGNAL_STOP as SIGNAL_STOP
from canopy.contracts.inputs import BareValueAccepted
from canopy.graphs.hooks import HookEvent
from canopy.graphs.nodemodels import AgentConfig, AgentNode, EnsembleNode, Node
from canopy.lanes import IntegrationMode
from canopy.limits import NODE_TIMEOUT_MINUTES
from canopy.platforms.usage import HarnessUsage as HarnessUsage  # re-exported: payloads carry it
from canopy.search_attributes import SEARCH_ATTRIBUTE_BLOCKER, SEARCH_ATTRIBUTE_STATUS
from canopy.workdir import WorktreeState

GRAPH_RUN_WORKFLOW = "GraphRunV2"
"""Workflow type name: one workflow id drains one run of a graph (``RunInput``), as a
chain of executions when it continues as new. It runs on the agents task queue of the host
holding the workdir, with its store bookkeeping as local activities: one round trip per
node."""

TypedBlocker = Annotated[Blocker, Field(discriminator="kind")]
"""A :data:`~canopy.contracts.graph_run_blocker.Blocker` in a payload: its class picked by
``kind``, every field validated (a payload recorded before blockers were typed holds the
same JSON the store keeps, so it loads)."""

RunState = Literal["running", "paused", "usage_limit", "completed", "failed", "reset"]
"""A run's ``CanopyStatus`` search attribute."""
RUN_SEARCH_ATTRIBUTES = (SEARCH_ATTRIBUTE_STATUS, SEARCH_ATTRIBUTE_BLOCKER)
"""The search attributes a run keeps current itself (``CanopyStatus``, ``CanopyBlocker``)."""

SpecOutcome = Literal["completed", "failed", "skipped", "interrupted", "limit_blocked"]
NodeStatus = Literal["succeeded", "failed", "limit_blocked", "timed_out", "stalled", "interrupted"]


class RunCounts(BaseModel):
    """What a run has done so far; carried across continue-as-new."""

    completed: int = 0
    failed: int = 0
    skipped: int = 0
    specs_started: int = 0
    usage: HarnessUsage | None = None
    """What its node runs' and agent hook runs' harnesses reported they used, summed as
    the results came back (for the Temporal UI's details)."""
    denials: int = 0
    """The permission denials its agents reported, summed (for the Temporal UI's details:
    a run whose agents were refused their work must not look like a good one)."""
    last_denial: str | None = None
    """The latest of them, one line."""


class RunInput(BaseModel):
    """Everything GraphRunV2 needs to start (or continue as new)."""

    run_id: str
    graph_id: str
    graph_name: str
    queue_id: str | None = None
    workdir: str
    agents_task_queue: str
    heartbeat_timeout_seconds: int = 30
    specs_per_execution: int = 100
    """Continue as new after this many specs (or sooner, when Temporal suggests it)."""
    status_attributes: bool = False
    """Whether the server has the ``CanopyStatus`` and ``CanopyBlocker`` search attributes
    (checked at start): only then does the run keep them current."""
    continued: bool = False
    """Set on a continue-as-new: the new execution starts between two specs, so the
    dirty-tree guard runs before its first spec. Also set on a fresh start whose launch
    guard left the git checks to the run's host (its workdir is not on the machine that
    started it), so the host checks the tree before the first spec too."""
    counts: RunCounts = Field(default_factory=RunCounts)
    lanes: int = 1
    """How many specs the run works on at once (docs/lanes.md). A run of more than one
    takes the lanes loop (:mod:`canopy.workflows.lanes`); every run recorded before lanes
    has none, so 1, and drains one spec at a time as it always did."""
    lanes_fixed: bool = False
    """Whether ``lanes`` was given for this run (``graph run --lanes``); if not, a run of
    lanes reads the graph's at each spec start, so an edit takes effect there."""
    target: str | None = None
    """The branch lanes integrate into: the one checked out in the workdir at the start."""
    lanes_started: int = 0
    """Lanes the run has opened so far, carried over continue-as-new: it numbers lane ids."""


class NextSpec(BaseModel):
    """The spec a run works on next, read fresh from the store."""

    spec_id: str
    name: str
    group: str | None = None


MAX_NODE_TIMEOUT_MINUTES = NODE_TIMEOUT_MINUTES.high
"""The longest a node may be given (7 days), the bound graph edits enforce. Graphs stored
before that check may hold more; the engine clamps to it, since Temporal deadlines and
Python timedeltas overflow long before ``1e308`` minutes and a workflow task that raises
on one fails forever, wedging the run."""


def node_timeout_minutes(value: object) -> float | None:
    """A stored ``timeout_minutes`` as the engine may use it.

    ``None`` (no node timeout) for a missing, non-numeric, NaN or non-positive value;
    otherwise the value, at most :data:`MAX_NODE_TIMEOUT_MINUTES` (infinity included).
    Graphs stored before timeouts were validated can hold any of these.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if (isinstance(value, float) and math.isnan(value)) or value <= 0:
        return None
    return min(value, MAX_NODE_TIMEOUT_MINUTES)


def _members_beside_the_node(data: Any) -> Any:
    """Payloads recorded before nodes were typed carried an ensemble's members inside the
    node, as ``ensemble_members``; workflow histories and activity tasks in flight from
    then still do. They move beside it, where they are now."""
    if not isinstance(data, dict):
        return data
    field = "definition" if "definition" in data else "node"
    node = data.get(field)
    if not isinstance(node, dict) or "ensemble_members" not in node:
        return data
    members = node["ensemble_members"]
    node = {key: value for key, value in node.items() if key != "ensemble_members"}
    return {**data, field: node, "ensemble_members": members}


class NodeStep(BaseModel):
    """One node as stored at dispatch time, with its transitions resolved."""

    name: str
    definition: Node
    ensemble_members: list[AgentConfig] = Field(default_factory=list)
    """An ensemble node's members as stored at dispatch time, in failover order."""
    next_node: str | None
    on_failure: str | None
    max_visits: int
    timeout_minutes: float | None

    _lift_members = model_validator(mode="before")(_members_beside_the_node)


class NodeTarget(BaseModel):
    """The node to run, the spec it runs for, and where: what every launch of it shares."""

    run_id: str
    graph_id: str
    graph_name: str
    spec_id: str
    workdir: str
    node: Node
    ensemble_members: list[AgentConfig] = Field(default_factory=list)
    """An ensemble node's members, as the run's :class:`NodeStep` read them."""
    resume_session_id: str | None = None
    member: int | None = None
    """For an ensemble node: which member (index) to launch."""
    budget_usd: float | None = None
    """What the node may still spend in USD under the graph's budget (``None``: no USD
    budget applies), passed to a CLI that caps its own spending."""

    _lift_members = model_validator(mode="before")(_members_beside_the_node)

    def agent(self) -> AgentConfig:
        """The agent to launch: an agent node's own, or the chosen ensemble member."""
        match self.node:
            case AgentNode():
                return self.node.agent
            case EnsembleNode() if self.member is not None:
                return self.ensemble_members[self.member]
        raise ValueError(f"node {self.node.name} launches no agent")


class NodeLaunch(NodeTarget):
    """What the agents-queue activity needs to run one node run it has recorded."""

    node_run_id: int


class NodeDispatch(NodeTarget):
    """One node launch as ``GraphRunV2`` hands it to the agents host, which does the
    bookkeeping around it in the same activity: the dirty-tree guard (when ``guard``), the
    spec's claim, the node run's record, the run, and the record of its end.

    ``launch_key`` (the workflow execution and a launch counter) keys the node run, so a
    retried attempt finds the record its first attempt made instead of adding one.
    """

    launch_key: str
    spec: NextSpec
    visit: int
    guard: bool = False
    branch: str | None = None
    """A lane's branch: ``workdir`` is then the lane's worktree, and the spec's passage
    records both when the launch claims it."""

    def recorded(self, node_run_id: int) -> NodeLaunch:
        """This launch with its node run recorded."""
        shared = {name: getattr(self, name) for name in NodeTarget.model_fields}
        return NodeLaunch(**shared, node_run_id=node_run_id)


class NodeResult(BaseModel):
    """How one node run ended."""

    status: NodeStatus
    exit_code: int | None = None
    log_path: str | None = None
    harness_session_id: str | None = None
    platform: str | None = None
    limit_reset_at: datetime | None = None
    error: str | None = None
    host: str | None = None
    """The machine whose worker ran the node; absent in results recorded before hosts were."""
    usage: HarnessUsage | None = None
    """What the node's harness reported it used (a handful of numbers, never its log);
    ``None`` for a command node, a harness that reported nothing, and results recorded
    before the usage ledger."""
    denial_count: int | None = None
    """How many permission denials the agent reported (``None``: not known, as for a
    command node and results recorded before denials were)."""
    denials: list[str] | None = None
    """The first few of them, one line each (what the agent was refused)."""


class DispatchOutcome(BaseModel):
    """What came of a :class:`NodeDispatch`: the node's result, or why it did not launch
    (the tree was dirty, or another run had claimed the spec)."""

    result: NodeResult | None = None
    dirty: WorktreeState | None = None
    taken: bool = False


class ReadAhead(BaseModel):
    """Ask the store what runs next: ``spec`` (else the run's next pending spec) at
    ``node`` (else the graph's first node)."""

    run_id: str
    graph_id: str
    spec: NextSpec | None = None
    node: str | None = None
    count_pending: bool = True
    """Also count the pending specs (:attr:`Ahead.pending`): on a big queue the count
    costs more than the rest of the read, so a fast run asks for it now and then."""
    passing_over: list[str] = Field(default_factory=list)
    """Specs a run of lanes has in flight, and so passes over when it reads the next."""
    groups_in_flight: list[str] = Field(default_factory=list)
    """Context groups one of whose members a run of lanes has in flight: their next member
    waits for it (a group is one lane)."""


class Ahead(BaseModel):
    """The spec a run goes on with and the node it starts at, as stored right now.

    ``spec`` ``None``: nothing is left to run. ``step`` ``None`` with a spec: the node
    named no longer exists (or the graph has none). ``read`` is false when the store was
    not asked (a spec close that did not look ahead).
    """

    read: bool = True
    spec: NextSpec | None = None
    step: NodeStep | None = None
    allow_dirty_start: bool = False
    lanes: int = 1
    """The graph's ``lanes`` as stored now (a run of lanes reads it at each spec start)."""
    integration: IntegrationMode = "rebase"
    """The graph's ``integration`` as stored now (read with ``lanes``)."""
    conflict_resolver: str | None = None
    """The graph's ``conflict_resolver`` as stored now (read with ``lanes``)."""
    pending: int | None = None
    """How many specs of the run's scope are pending, ``spec`` included (for progress);
    ``None`` when not counted."""
    budget: BudgetState | None = None
    """The graph's budget as stored now, with what the run and ``spec`` have spent
    (``None``: the graph has no budget)."""


class SpecClose(BaseModel):
    """End a spec's passage with ``outcome`` (claiming the spec first if no launch did),
    then, when ``read_ahead``, read what runs next, all in one store transaction."""

    run_id: str
    graph_id: str
    spec: NextSpec
    outcome: SpecOutcome
    ended_node: str | None = None
    read_ahead: bool = False
    count_pending: bool = True
    """As :attr:`ReadAhead.count_pending`, when reading ahead."""
    kept_branch: str | None = None
    lane_closed: bool = False
    """A lane's spec: its worktree is gone, and its branch is kept (``kept_branch``, named
    in the passage) or gone too."""


class SpecClosed(BaseModel):
    """The closed passage (``None``: none was open), ``taken`` when another run holds the
    spec, whether ``on_spec_completed`` hooks are configured now, and what runs next if
    that was read."""

    passage_id: int | None
    taken: bool = False
    spec_completed_hooks: bool = False
    ahead: Ahead = Field(default_factory=lambda: Ahead(read=False))


class WorkdirRef(BareValueAccepted):
    """The workdir whose tree the dirty-tree guard checks."""

    workdir: str


class RunRef(BaseModel):
    """A store call about one run (resume, reset)."""

    run_id: str


class GraphRef(BaseModel):
    """A store call about one graph (its ``allow_dirty_start``, read fresh)."""

    graph_id: str


class RunPause(BaseModel):
    """Pause a run with ``blocker`` stored on its graph."""

    run_id: str
    blocker: TypedBlocker


class ResumeSchedule(BaseModel):
    """When a run's usage-limit wait ends (``None``: it ended)."""

    run_id: str
    resume_at: datetime | None


class DirectedSpec(BaseModel):
    """The spec a ``continue --spec`` names, for this run."""

    run_id: str
    spec_id: str


class GroupSessionQuery(BaseModel):
    """Which warm harness session a grouped spec resumes at ``node`` on ``platform``."""

    run_id: str
    group: str
    node: str
    platform: str


class RunSettlement(BaseModel):
    """A run's final status, its blocker and counts."""

    run_id: str
    status: str
    blocker: TypedBlocker | None
    counts: RunCounts


class LaunchEnd(BaseModel):
    """How a launch ended when its node activity could not record it."""

    launch_key: str
    result: NodeResult


class LaneStatus(BaseModel):
    """One spec in flight in a run of lanes: its node (``None`` once its walk ended) and
    since when, its worktree and branch, and what it is doing."""

    spec_id: str
    spec_name: str
    node: str | None = None
    since: datetime
    worktree: str | None = None
    branch: str | None = None
    state: Literal["running", "waiting to integrate", "integrating", "usage limit"] = "running"


class RunStatus(BaseModel):
    """The ``status`` query: what the run is doing right now."""

    run_id: str
    spec_id: str | None = None
    spec_name: str | None = None
    node: str | None = None
    scheduled_resume_at: datetime | None = None
    waiting_for: str | None = None
    counts: RunCounts = Field(default_factory=RunCounts)
    lanes: list[LaneStatus] = Field(default_factory=list)
    """A run of lanes: each spec in flight, in the order they will be integrated."""


class ContinueRequest(BaseModel):
    """The ``continue_run`` signal: how a paused run should go on.

    ``recheck`` re-runs the dirty-tree guard and proceeds when it passes;
    ``run_from_node`` starts ``spec_id`` (default: the next spec) at ``node`` (default:
    the first) without the guard; ``skip_next_spec`` marks the next spec skipped.
    """

    model_config = ConfigDict(extra="forbid")

    mode: ContinueMode = "recheck"
    node: str | None = None
    spec_id: str | None = None


class SteerOutcome(BaseModel):
    """What a steering update answers once the run has acted on it: the graph's status
    as the run has just written it (``running``, ``paused``, ``completed``, ``failed``,
    ``idle`` after a reset) and the message of the blocker it is paused or settled with."""

    status: str
    blocker: str | None = None


class IgnoredSignal(ValueError):
    """A control signal the run did not act on, with the one-line reason."""


def read_control(name: str, inputs: list[Any]) -> ContinueRequest | None:
    """What control signal ``name`` with its decoded ``inputs`` asks for: the continue
    request for ``continue_run`` (no input, or ``null``, means every default), ``None``
    for the signals that take no input (none, ``null`` or ``{}`` is accepted).

    Raises :class:`IgnoredSignal` naming what was wrong: an unknown signal, more than one
    input, input where none is taken, or a continue request that does not validate.
    """
    if name not in CONTROL_SIGNALS:
        known = ", ".join(CONTROL_SIGNALS)
        raise IgnoredSignal(f"unknown signal {name!r} (a graph run takes {known})")
    if len(inputs) > 1:
        raise IgnoredSignal(f"{name} takes at most one input, got {len(inputs)}")
    value = inputs[0] if inputs else None
    if name != SIGNAL_CONTINUE:
        if value not in (None, {}):
            raise IgnoredSignal(f"{name} takes no input, got {_shown(value)}")
        return None
    if value is None:
        return ContinueRequest()
    if not isinstance(value, dict):
        raise IgnoredSignal(
            f'{name} takes an object like {{"mode": "recheck"}}, got {_shown(value)}'
        )
    try:
        return ContinueRequest.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        raise IgnoredSignal(f"{name}: {where}: {first['msg']}") from None


def _shown(value: Any) -> str:
    """A short, one-line rendering of a rejected input."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


class IgnoredSignalRecord(BaseModel):
    """An ignored control signal, to record on the run and as a notification."""

    run_id: str
    signal: str
    reason: str
    at: datetime


class HooksFired(BareValueAccepted):
    """What a firing ran: the hook runs this attempt ran and what their harnesses reported
    they used, summed (agent hooks only). Recorded histories hold the bare list of ids."""

    hook_run_ids: list[int]
    usage: HarnessUsage | None = None


class HookFiring(BaseModel):
    """One occurrence of a graph event: what the hooks fired for it may know.

    ``occurrence`` names this occurrence within the run (a spec passage, the settle, the
    n-th pause), so hook runs are recorded once per occurrence even if the firing
    activity is retried.
    """

    run_id: str
    graph_id: str
    graph_name: str
    workdir: str
    event: HookEvent
    occurrence: str
    spec_id: str | None = None
    spec_name: str | None = None
    failed_specs: list[str] = Field(default_factory=list)
    blocker: str | None = None
    node: str | None = None
