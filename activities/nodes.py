"""Running one node for one spec: an agent launch or a shell command, on the agents queue.

The process runs in its own process group with output streamed to a log file under the
data dir; the activity heartbeats the process group and the harness session id, so that
a retry after a worker crash first kills the orphaned process group and then resumes the
same harness session. Cancellation (``graph stop``) kills the whole group. An agent's own
non-zero exit is a node failure, returned as a result, never an activity error.
"""

import asyncio
import ctypes
import os
import signal
import sys
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from temporalio import activity

from canopy import markers, specformat
from canopy.paths import canopy_home
from canopy.platforms import clamp_reset, get_platform
from canopy.runmodels import NodeLaunch, NodeResult
from canopy.store.engine import open_store
from canopy.store.models import Spec
from canopy.timefmt import utcnow

PR_SET_PDEATHSIG = 1
HEARTBEAT_EVERY_SECONDS = 1.0
OUTPUT_TAIL_LINES = 200
"""Output lines kept in memory for usage-limit detection (the full output is in the log)."""


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


def kill_group(pgid: int) -> None:
    """SIGKILL a process group if it still exists."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def die_with_parent() -> None:
    """In the child, before exec: on Linux, get SIGKILL when the worker dies.

    A SIGKILLed worker cannot clean up; without this the agent would keep editing the
    tree while the retried activity starts another one. (The retry also kills the old
    process group recorded in the heartbeat, for the agent's own children.)
    """
    if sys.platform == "linux":
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def previous_attempt() -> dict[str, Any]:
    """Heartbeat details of the previous attempt (after a worker crash), else ``{}``."""
    details = activity.info().heartbeat_details
    return dict(details[0]) if details else {}


async def run_process(
    argv: list[str],
    launch: NodeLaunch,
    env: dict[str, str],
    platform_name: str | None,
    resume_session_id: str | None,
) -> NodeResult:
    """Run ``argv`` in the workdir, stream its output to the log, heartbeat, and report."""
    log_path = log_path_for(launch)
    platform = get_platform(platform_name) if platform_name else None
    timeout = launch.node.get("timeout_minutes")
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=launch.workdir,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    state: dict[str, Any] = {"pgid": process.pid, "session_id": resume_session_id}
    tail: deque[str] = deque(maxlen=OUTPUT_TAIL_LINES)

    async def pump() -> None:
        assert process.stdout is not None
        with log_path.open("ab") as log:
            async for raw in process.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", errors="replace")
                tail.append(line)
                found = platform.session_id_from_line(line) if platform else None
                if found and found != state["session_id"]:
                    state["session_id"] = found
                    activity.heartbeat(dict(state))

    async def beat() -> None:
        while True:
            activity.heartbeat(dict(state))
            await asyncio.sleep(HEARTBEAT_EVERY_SECONDS)

    beating = asyncio.create_task(beat())
    try:
        await asyncio.wait_for(
            asyncio.gather(pump(), process.wait()), timeout=timeout * 60 if timeout else None
        )
    except TimeoutError:
        kill_group(process.pid)
        await process.wait()
        return NodeResult(
            status="timed_out",
            exit_code=process.returncode,
            log_path=str(log_path),
            harness_session_id=state["session_id"],
            platform=platform_name,
            error=f"node {launch.node['name']} timed out after {timeout} minutes",
        )
    except asyncio.CancelledError:
        kill_group(process.pid)
        raise
    finally:
        beating.cancel()
    exit_code = process.returncode
    limit = platform.usage_limit("".join(tail), utcnow()) if platform and exit_code else None
    if limit is not None:
        return NodeResult(
            status="limit_blocked",
            exit_code=exit_code,
            log_path=str(log_path),
            harness_session_id=state["session_id"],
            platform=platform_name,
            limit_reset_at=clamp_reset(limit.reset_at, utcnow()),
            error=limit.message,
        )
    return NodeResult(
        status="succeeded" if exit_code == 0 else "failed",
        exit_code=exit_code,
        log_path=str(log_path),
        harness_session_id=state["session_id"],
        platform=platform_name,
    )


@activity.defn
async def run_agent_node(launch: NodeLaunch) -> NodeResult:
    """Launch the node's agent with its rendered prompt (resuming a session if asked)."""
    before = previous_attempt()
    if before.get("pgid"):
        kill_group(int(before["pgid"]))
    resume = before.get("session_id") or launch.resume_session_id
    node = launch.node
    platform_name, model, effort = _agent_config(node, launch.member)
    values = node_marker_values(launch)
    prompt = markers.render(node["prompt"], values, markers.NODE_MARKERS)
    argv = get_platform(platform_name).build_argv(
        prompt, model=model, effort=effort, resume_session_id=resume
    )
    return await run_process(argv, launch, node_env(launch, values), platform_name, resume)


@activity.defn
async def run_command_node(launch: NodeLaunch) -> NodeResult:
    """Run the node's shell command (markers shell-quoted) in the workdir."""
    before = previous_attempt()
    if before.get("pgid"):
        kill_group(int(before["pgid"]))
    values = node_marker_values(launch)
    command = markers.render(launch.node["command"], values, markers.NODE_MARKERS, shell=True)
    env = node_env(launch, values)
    return await run_process(["/bin/sh", "-c", command], launch, env, None, None)


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
