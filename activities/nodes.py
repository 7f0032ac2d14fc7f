"""Running one node for one spec: an agent launch or a shell command, on the agents queue.

Each node run's process runs detached (:mod:`canopy.activities.detached`) in its own directory,
``<data dir>/logs/runs/<run>/nodes/<node run id>/``, whose ``output.log`` is the node's
log. It is started once: a retried activity (its worker killed, or the server down past
the heartbeat timeout) adopts the running or finished process instead of launching
again. Only a machine restart loses a process; an agent then starts again resuming its
own harness session, while a command is reported lost rather than run twice.

An agent's own non-zero exit is a node failure, returned as a result, never an activity
error; so is anything that keeps the node from starting, with the reason recorded.
"""

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from temporalio import activity

from canopy.activities import ledger
from canopy.activities.bookkeeping import RunRecords
from canopy.activities.detached import (
    Command,
    LaunchError,
    OutputWatcher,
    ProcessEnd,
    ProcessFiles,
    exit_reason,
    run_once,
)
from canopy.backlog import specformat
from canopy.contracts.graph_run import DispatchOutcome, NodeDispatch, NodeLaunch, NodeResult
from canopy.errors import Refused
from canopy.graphs import markers
from canopy.graphs.nodemodels import AgentNode, CommandNode, EnsembleNode
from canopy.paths import run_log_dir
from canopy.permissions import Permissions, nearest, stored_permissions
from canopy.platforms import (
    Platform,
    UsageLimit,
    get_platform,
    limit_wait,
    load_stall_minutes,
    platform_permissions,
)
from canopy.store.engine import Store
from canopy.store.queries import Rows
from canopy.temporal.client import this_host
from canopy.timefmt import utcnow
from canopy.workdir import worktree_state

MAX_RECORDED_DENIALS = 5
"""How many of a node run's denials are kept, one line each (all are counted)."""
SESSION_IDS = uuid.UUID("5d1f4c2e-8a7b-4f0e-9c3d-2b6a1e0f7c94")
"""The namespace of the session ids Canopy chooses for node runs (:func:`chosen_session_id`)."""


def node_marker_values(store: Store, launch: NodeLaunch) -> dict[str, str | None]:
    """Marker values for a node prompt or command: graph, spec, body and its sections.

    A store read: the node activities run it on a thread, off the worker's event loop."""
    with store.transaction() as rows:
        return _marker_values(_spec(rows, launch.spec_id), launch)


def agent_launch_context(
    store: Store, launch: NodeLaunch
) -> tuple[dict[str, str | None], Permissions | None]:
    """An agent node's marker values and its graph's permission level, read together."""
    with store.transaction() as rows:
        values = _marker_values(_spec(rows, launch.spec_id), launch)
        (graph,) = rows("SELECT permissions FROM graphs WHERE id = :id", {"id": launch.graph_id})
        return values, stored_permissions(graph["permissions"])


def _spec(rows: Rows, spec_id: str) -> tuple[str, str]:
    """A spec's name and body."""
    (spec,) = rows("SELECT name, body FROM specs WHERE id = :id", {"id": spec_id})
    return spec["name"], spec["body"]


def _marker_values(spec: tuple[str, str], launch: NodeLaunch) -> dict[str, str | None]:
    name, body = spec
    values: dict[str, str | None] = dict(specformat.read_body(body).sections)
    values.update(
        graph_name=launch.graph_name,
        workdir=launch.workdir,
        spec_name=name,
        spec_id=launch.spec_id,
        node=launch.node.name,
        spec_body=body,
    )
    return values


def node_files(launch: NodeLaunch) -> ProcessFiles:
    """``<data dir>/logs/runs/<run>/nodes/<node run id>/``: ids only, never a node's name
    (the spec and node are named in the heartbeats instead)."""
    about = {"spec_id": launch.spec_id, "node": launch.node.name}
    return ProcessFiles(run_log_dir(launch.run_id, "nodes", launch.node_run_id), about)


class NodeActivities:
    """The node activity, bound to the store it reads specs from and records node runs
    in."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._records = RunRecords(store)

    @activity.defn
    async def dispatch_node(self, dispatch: NodeDispatch) -> DispatchOutcome:
        """One node launch with its bookkeeping, in one round trip (``GraphRunV2``): the
        dirty-tree guard when asked (nothing launches on a dirty tree), the spec's claim
        (nothing launches if another run holds it), the node run's record, the node, and the
        record of its end.

        A retried attempt finds the node run its first attempt recorded and adopts the
        process (see the module docstring) instead of guarding and launching again: by then
        the tree holds the node's own edits.
        """
        opened = await asyncio.to_thread(self._records.open_launch, dispatch, worktree_state)
        if isinstance(opened, DispatchOutcome):
            return opened
        launch = dispatch.recorded(opened)
        match launch.node:
            case CommandNode() as node:
                result = await self._run_command_node(launch, node)
            case AgentNode() | EnsembleNode() as node:
                result = await self._run_agent_node(launch, node)
        await asyncio.to_thread(self._records.record_node_end, opened, result)
        return DispatchOutcome(result=result)

    async def _run_agent_node(
        self, launch: NodeLaunch, node: AgentNode | EnsembleNode
    ) -> NodeResult:
        """Launch the node's agent with its rendered prompt on stdin (resuming a session if
        asked), or adopt the launch an earlier attempt made."""
        agent = launch.agent()
        files = node_files(launch)
        values, graph_permissions = await asyncio.to_thread(
            agent_launch_context, self._store, launch
        )
        try:
            platform = get_platform(agent.platform)
            stall = node.stall_minutes if node.stall_minutes is not None else load_stall_minutes()
            permissions = nearest(
                agent.permissions,
                node.permissions,
                graph_permissions,
                platform_permissions(agent.platform),
            )
        except Refused as refusal:
            return _not_started(launch, files, refusal, agent.platform)
        chosen = chosen_session_id(launch) if platform.takes_session_id else None
        watcher = OutputWatcher(files.output, platform, launch.resume_session_id or chosen)

        def command() -> Command:
            prompt = markers.render(node.prompt, values, markers.NODE_MARKERS)
            resume = _session_to_resume(watcher.session_id, chosen, platform, launch, files)
            invocation = platform.build_invocation(
                prompt,
                model=agent.model,
                effort=agent.effort,
                resume_session_id=resume,
                permissions=permissions,
                session_id=chosen,
            )
            env = node_env(launch, values)
            argv = invocation.argv
            if launch.budget_usd is not None:
                argv = [*argv, *platform.budget_flags(launch.budget_usd)]
            return Command(argv, launch.workdir, env, invocation.stdin)

        def launch_or_adopt() -> Awaitable[ProcessEnd]:
            return run_once(
                files,
                command,
                timeout_minutes=node.timeout_minutes,
                watcher=watcher,
                stall_minutes=stall,
            )

        try:
            end = await launch_or_adopt()
            if end.lost:  # the machine went down under it: the agent resumes its own session
                files.set_lost_aside()
                end = await launch_or_adopt()
        except (Refused, LaunchError) as error:
            return _not_started(launch, files, error, agent.platform)
        # On a thread: reading what the harness used reads its whole log.
        streak = partial(self._records.limit_streak, launch)
        return await asyncio.to_thread(node_result, launch, files, end, watcher, platform, streak)

    async def _run_command_node(self, launch: NodeLaunch, node: CommandNode) -> NodeResult:
        """Run the node's shell command in the workdir (markers read from the environment),
        or adopt the run an earlier attempt started."""
        files = node_files(launch)
        watcher = OutputWatcher(files.output, None, None)
        values = await asyncio.to_thread(node_marker_values, self._store, launch)

        def command() -> Command:
            rendered, env = markers.shell_command(
                node.command, values, markers.NODE_MARKERS, markers.NODE_ENV_PREFIX
            )
            return Command(
                ["/bin/sh", "-c", rendered], launch.workdir, {**env, **node_env(launch, values)}
            )

        try:
            end = await run_once(
                files, command, timeout_minutes=node.timeout_minutes, watcher=watcher
            )
        except (Refused, LaunchError) as error:
            return _not_started(launch, files, error, None)
        return node_result(launch, files, end, watcher, None)


def node_result(
    launch: NodeLaunch,
    files: ProcessFiles,
    end: ProcessEnd,
    watcher: OutputWatcher,
    platform: Platform | None,
    limit_streak: Callable[[], int] = lambda: 0,
) -> NodeResult:
    """How the node ended, always with the reason when it did not succeed, what its
    harness reported it used (a run that failed or was stopped may have used plenty) and
    the permission denials it reported.

    ``limit_streak`` counts the usage-limited node runs just before this one, for the
    backoff of an API rate limit that names no reset (asked only then).
    """
    report = ledger.read_report(platform, files.output)
    ended = NodeResult(
        status="succeeded" if end.exit_code == 0 else "failed",
        exit_code=end.exit_code,
        log_path=str(files.output),
        harness_session_id=watcher.session_id,
        platform=platform.name if platform else None,
        host=this_host(),
        usage=report.usage,
        denial_count=len(report.denials) if platform else None,
        denials=report.denials[:MAX_RECORDED_DENIALS] or None,
    )
    if end.long_retry is not None:
        notice = end.long_retry.notice
        wait = notice.wait or timedelta(0)
        said_at = datetime.fromtimestamp(end.long_retry.at, UTC)
        return _limit_blocked(ended, UsageLimit(said_at + wait, notice.message), 0)
    if end.timed_out or end.stalled:
        status = "timed_out" if end.timed_out else "stalled"
        message = f"node {launch.node.name} {end.problem}"
        return ended.model_copy(update={"status": status, "error": message})
    if end.exit_code is None:
        return ended.model_copy(update={"error": end.problem})
    if end.exit_code == 0:
        return _denial_verdict(ended, launch)
    limit = platform.usage_limit(watcher.tail, utcnow()) if platform else None
    if limit is not None:
        streak = limit_streak() if limit.kind == "rate" and limit.reset_at is None else 0
        return _limit_blocked(ended, limit, streak)
    return ended.model_copy(update={"error": exit_reason(end.exit_code, watcher.tail)})


def _limit_blocked(ended: NodeResult, limit: UsageLimit, streak: int) -> NodeResult:
    """``ended`` as a usage-limited node run, retrying when :func:`limit_wait` says."""
    wait = limit_wait(limit, utcnow(), streak=streak)
    update = {"status": "limit_blocked", "limit_reset_at": wait.retry_at, "error": wait.reason}
    return ended.model_copy(update=update)


def _denial_verdict(ended: NodeResult, launch: NodeLaunch) -> NodeResult:
    """A run that exited 0: succeeded, unless its agent was refused something and the
    node says a denial fails it (``on_denial = "fail"``)."""
    node = launch.node
    fails = isinstance(node, AgentNode | EnsembleNode) and node.on_denial == "fail"
    if not fails or not ended.denial_count:
        return ended
    first = (ended.denials or ["?"])[0]
    error = (
        f"node {node.name}: the agent was refused {ended.denial_count} action(s) and the "
        f"node fails on a denial (first: {first})"
    )
    return ended.model_copy(update={"status": "failed", "error": error})


def _not_started(
    launch: NodeLaunch, files: ProcessFiles, error: Exception, platform: str | None
) -> NodeResult:
    """A node that could not start (bad template, unknown platform, no such workdir)."""
    log = files.output if files.output.exists() else None
    return NodeResult(
        status="failed",
        error=f"node {launch.node.name} could not start: {error}",
        log_path=str(log) if log else None,
        platform=platform,
        host=this_host(),
    )


def _session_to_resume(
    session_id: str | None,
    chosen: str | None,
    platform: Platform,
    launch: NodeLaunch,
    files: ProcessFiles,
) -> str | None:
    """The session a launch resumes: the one it was given or its CLI reported, unless that
    is the id Canopy chose for this node run and the CLI never started it (a first launch,
    or one lost before the CLI wrote its conversation), which a fresh run takes instead."""
    if session_id is None or session_id != chosen:
        return session_id
    if not files.relaunched:
        return None
    known = platform.conversations(Path(launch.workdir)) or []
    return chosen if any(c.conversation_id == chosen for c in known) else None


def chosen_session_id(launch: NodeLaunch) -> str:
    """The session id a fresh agent run takes where its CLI lets Canopy choose one: the
    same for every attempt at this node run, so an attempt adopting a launch (or
    relaunching one lost before its first output line) knows it without any output."""
    return str(uuid.uuid5(SESSION_IDS, f"{launch.run_id}/{launch.node_run_id}"))


def node_env(launch: NodeLaunch, values: dict[str, str | None]) -> dict[str, str]:
    """The environment every node process gets."""
    return {
        "CANOPY_SPEC_ID": launch.spec_id,
        "CANOPY_SPEC_NAME": values["spec_name"] or "",
        "CANOPY_NODE": launch.node.name,
        "CANOPY_GRAPH_ID": launch.graph_id,
        "CANOPY_RUN_ID": launch.run_id,
        "CANOPY_WORKDIR": launch.workdir,
    }
