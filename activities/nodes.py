"""Running one node for one spec: an agent launch or a shell command, on the agents queue.

Processes run through :func:`activities.process.run_logged` (own process group, log
file, heartbeats carrying the harness session). An agent's own non-zero exit is a node
failure, returned as a result, never an activity error.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.process import previous_attempt, run_logged
from canopy import markers, specformat
from canopy.paths import canopy_home
from canopy.platforms import clamp_reset, get_platform
from canopy.runmodels import NodeLaunch, NodeResult
from canopy.store.engine import open_store
from canopy.store.models import Spec
from canopy.timefmt import utcnow


def node_marker_values(launch: NodeLaunch) -> dict[str, str | None]:
    """Marker values for a node prompt or command: graph, spec, body and its sections."""
    with open_store().transaction() as session:
        spec = session.get_one(Spec, launch.spec_id)
        name, body = spec.name, spec.body
    values: dict[str, str | None] = dict(specformat.read_body(body).sections)
    values.update(
        graph_name=launch.graph_name,
        workdir=launch.workdir,
        spec_name=name,
        spec_id=launch.spec_id,
        node=launch.node["name"],
        spec_body=body,
    )
    return values


def log_path_for(launch: NodeLaunch) -> Path:
    """``<data dir>/logs/runs/<run>/<node run id>-<node>.log``."""
    directory = canopy_home() / "logs" / "runs" / launch.run_id
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{launch.node_run_id:06d}-{launch.node['name']}.log"


async def run_node_process(
    argv: list[str],
    launch: NodeLaunch,
    env: dict[str, str],
    platform_name: str | None,
    resume_session_id: str | None,
) -> NodeResult:
    """Run a node's process and turn how it ended into a node result."""
    platform = get_platform(platform_name) if platform_name else None
    log_path = log_path_for(launch)
    timeout = launch.node.get("timeout_minutes")
    outcome = await run_logged(
        argv,
        cwd=launch.workdir,
        env=env,
        log_path=log_path,
        platform=platform,
        timeout_minutes=timeout,
        resume_session_id=resume_session_id,
    )
    ended = NodeResult(
        status="succeeded" if outcome.exit_code == 0 else "failed",
        exit_code=outcome.exit_code,
        log_path=str(log_path),
        harness_session_id=outcome.session_id,
        platform=platform_name,
    )
    if outcome.timed_out:
        message = f"node {launch.node['name']} timed out after {timeout} minutes"
        return ended.model_copy(update={"status": "timed_out", "error": message})
    limit = platform.usage_limit(outcome.tail, utcnow()) if platform and outcome.exit_code else None
    if limit is not None:
        reset_at = clamp_reset(limit.reset_at, utcnow())
        return ended.model_copy(
            update={"status": "limit_blocked", "limit_reset_at": reset_at, "error": limit.message}
        )
    return ended


@activity.defn
async def run_agent_node(launch: NodeLaunch) -> NodeResult:
    """Launch the node's agent with its rendered prompt (resuming a session if asked)."""
    before = previous_attempt()
    resume = before.get("session_id") or launch.resume_session_id
    node = launch.node
    platform_name, model, effort = _agent_config(node, launch.member)
    values = node_marker_values(launch)
    prompt = markers.render(node["prompt"], values, markers.NODE_MARKERS)
    argv = get_platform(platform_name).build_argv(
        prompt, model=model, effort=effort, resume_session_id=resume
    )
    return await run_node_process(argv, launch, node_env(launch, values), platform_name, resume)


@activity.defn
async def run_command_node(launch: NodeLaunch) -> NodeResult:
    """Run the node's shell command (markers shell-quoted) in the workdir."""
    previous_attempt()
    values = node_marker_values(launch)
    command = markers.render(launch.node["command"], values, markers.NODE_MARKERS, shell=True)
    env = node_env(launch, values)
    return await run_node_process(["/bin/sh", "-c", command], launch, env, None, None)


def node_env(launch: NodeLaunch, values: dict[str, str | None]) -> dict[str, str]:
    """The environment every node process gets (DESIGN §5)."""
    return {
        "CANOPY_SPEC_ID": launch.spec_id,
        "CANOPY_SPEC_NAME": values["spec_name"] or "",
        "CANOPY_NODE": launch.node["name"],
        "CANOPY_GRAPH_ID": launch.graph_id,
        "CANOPY_RUN_ID": launch.run_id,
        "CANOPY_WORKDIR": launch.workdir,
    }


def _agent_config(node: dict[str, Any], member: int | None) -> tuple[str, str | None, str | None]:
    """Platform, model and effort of an agent node, or of one of its ensemble's members."""
    config = node["ensemble_members"][member] if member is not None else node
    return config["platform"], config.get("model"), config.get("effort")


ALL: list[Callable[..., Any]] = [run_agent_node, run_command_node]
