"""Running an agent or shell process for an activity: one implementation for nodes and
hooks.

The process runs in its own process group with output streamed to a log file; the
activity heartbeats the process group and the harness session id, so a retry after a
worker crash can kill the orphaned group and resume the same harness session. On Linux
the process also dies with the worker. Cancellation and timeouts kill the whole group.
"""

import asyncio
import ctypes
import os
import signal
import sys
from collections import deque
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity

from canopy.platforms import Platform

PR_SET_PDEATHSIG = 1
HEARTBEAT_EVERY_SECONDS = 1.0
OUTPUT_TAIL_LINES = 200
"""Output lines kept in memory (usage-limit detection, hook output); the log has it all."""


@dataclass(frozen=True)
class ProcessOutcome:
    """How a process ended: exit code (``None`` if killed on timeout), session, output."""

    exit_code: int | None
    session_id: str | None
    tail: str
    timed_out: bool


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
    """Heartbeat details of this activity's previous attempt, after killing its process
    group (a worker crash leaves it orphaned); ``{}`` on a first attempt."""
    details = activity.info().heartbeat_details
    before = dict(details[0]) if details else {}
    if before.get("pgid"):
        kill_group(int(before["pgid"]))
    return before


async def run_logged(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    log_path: Path,
    platform: Platform | None = None,
    timeout_minutes: float | None = None,
    resume_session_id: str | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in ``cwd``, stream its output to ``log_path``, heartbeat, and report."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
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
    timed_out = False
    try:
        await asyncio.wait_for(
            asyncio.gather(pump(), process.wait()),
            timeout=timeout_minutes * 60 if timeout_minutes else None,
        )
    except TimeoutError:
        timed_out = True
        kill_group(process.pid)
        await process.wait()
    except asyncio.CancelledError:
        kill_group(process.pid)
        raise
    finally:
        beating.cancel()
    return ProcessOutcome(
        exit_code=None if timed_out else process.returncode,
        session_id=state["session_id"],
        tail="".join(tail),
        timed_out=timed_out,
    )
