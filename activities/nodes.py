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
from collections.abc import Awaitable

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
from canopy.graphs.model import AgentNode, CommandNode, EnsembleNode
from canopy.paths import run_log_dir
from canopy.permissions import DEFAULT_PERMISSIONS
from canopy.platforms import Platform, get_platform, limit_wait, load_stall_minutes
from canopy.store.engine import Store
from canopy.store.models import Spec
from canopy.temporal.client import this_host
from canopy.timefmt import utcnow
from canopy.workdir import worktree_state


def node_marker_values(store: Store, launch: NodeLaunch) -> dict[str, str | None]:
    """Marker values for a node prompt or command: graph, spec, body and its sections.

    A store read: the node activities run it on a thread, off the worker's event loop."""
    with store.transaction() as db:
        spec = db.get_one(Spec, launch.spec_id)
        name, body = spec.name, spec.body
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
    """The node activities, bound to the store they read specs from and record node runs
    in. ``dispatch_node`` is ``GraphRunV2``'s; the legacy ``GraphRun`` launches
    ``run_agent_node`` and ``run_command_node`` itself."""

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
            case CommandNode():
                result = await self.run_command_node(launch)
            case AgentNode() | EnsembleNode():
                result = await self.run_agent_node(launch)
        await asyncio.to_thread(self._records.record_node_end, opened, result)
        return DispatchOutcome(result=result)

    @activity.defn
    async def run_agent_node(self, launch: NodeLaunch) -> NodeResult:
        """Launch the node's agent with its rendered prompt on stdin (resuming a session if
        asked), or adopt the launch an earlier attempt made."""
        node = launch.node
        if not isinstance(node, AgentNode | EnsembleNode):
            raise Refused(f"node {node.name} is not an agent node")
        agent = launch.agent()
        files = node_files(launch)
        try:
            platform = get_platform(agent.platform)
            stall = node.stall_minutes if node.stall_minutes is not None else load_stall_minutes()
        except Refused as refusal:
            return _not_started(launch, files, refusal, agent.platform)
        watcher = OutputWatcher(files.output, platform, launch.resume_session_id)
        values = await asyncio.to_thread(node_marker_values, self._store, launch)

        def command() -> Command:
            prompt = markers.render(node.prompt, values, markers.NODE_MARKERS)
            invocation = platform.build_invocation(
                prompt,
                model=agent.model,
                effort=agent.effort,
                resume_session_id=watcher.session_id,
                permissions=DEFAULT_PERMISSIONS,
            )
            env = node_env(launch, values)
            return Command(invocation.argv, launch.workdir, env, invocation.stdin)

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
        return await asyncio.to_thread(node_result, launch, files, end, watcher, platform)

    @activity.defn
    async def run_command_node(self, launch: NodeLaunch) -> NodeResult:
        """Run the node's shell command in the workdir (markers read from the environment),
        or adopt the run an earlier attempt started."""
        node = launch.node
        if not isinstance(node, CommandNode):
            raise Refused(f"node {node.name} is not a command node")
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
) -> NodeResult:
    """How the node ended, always with the reason when it did not succeed, and what its
    harness reported it used (a run that failed or was stopped may have used plenty)."""
    ended = NodeResult(
        status="succeeded" if end.exit_code == 0 else "failed",
        exit_code=end.exit_code,
        log_path=str(files.output),
        harness_session_id=watcher.session_id,
        platform=platform.name if platform else None,
        host=this_host(),
        usage=ledger.logged_usage(platform, files.output),
    )
    if end.timed_out or end.stalled:
        status = "timed_out" if end.timed_out else "stalled"
        message = f"node {launch.node.name} {end.problem}"
        return ended.model_copy(update={"status": status, "error": message})
    if end.exit_code is None:
        return ended.model_copy(update={"error": end.problem})
    if end.exit_code == 0:
        return ended
    limit = platform.usage_limit(watcher.tail, utcnow()) if platform else None
    if limit is not None:
        wait = limit_wait(limit, utcnow())
        return ended.model_copy(
            update={
                "status": "limit_blocked",
                "limit_reset_at": wait.retry_at,
                "error": wait.reason,
            }
        )
    return ended.model_copy(update={"error": exit_reason(end.exit_code)})


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


def node_env(launch: NodeLaunch, values: dict[str, str | None]) -> dict[str, str]:
    """The environment every node process gets (DESIGN §5)."""
    return {
        "CANOPY_SPEC_ID": launch.spec_id,
        "CANOPY_SPEC_NAME": values["spec_name"] or "",
        "CANOPY_NODE": launch.node.name,
        "CANOPY_GRAPH_ID": launch.graph_id,
        "CANOPY_RUN_ID": launch.run_id,
        "CANOPY_WORKDIR": launch.workdir,
    }
