"""The Canopy daemon: hosts Canopy's workflows and activities on Temporal.

One process runs two Temporal workers side by side: one on the shared main task queue
(session delivery and its store calls, scheduled fires) and one on this host's agents
task queue (graph runs, with their store calls as local activities; agent, command, hook,
session turn and git activities, which must run where the workdir is).
``CANOPY_HOST`` names the host (default: the host name): main-queue work goes to any
worker, while each machine holding workdirs serves its own ``canopy-agents@<host>``.
SIGTERM or SIGINT shut both down gracefully, letting in-flight activities finish for a
bounded time, and the process exits 0. Logs go to stdout (``canopy up`` redirects them
to ``logs/worker.log``).

Run it as ``python worker.py``, ``python -m canopy.worker`` or ``canopy worker``.
"""

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, NoReturn

from temporalio.client import Client
from temporalio.worker import Worker

from canopy.activities.bookkeeping import RunRecords
from canopy.activities.delivery import DeliveryActivities
from canopy.activities.hooks import HookActivities
from canopy.activities.lanes import close_lane_worktree, integrate_lane_branch, open_lane_worktree
from canopy.activities.nodes import NodeActivities
from canopy.activities.run_state import RunControl
from canopy.activities.schedules import ScheduleActivities
from canopy.activities.worktree import check_worktree
from canopy.errors import Refused
from canopy.keep_awake import SleepInhibitor, inhibitor_argv, keep_awake_while
from canopy.ops.session_wake import wake_stalled_sessions
from canopy.platforms.config import load_keep_awake
from canopy.store.engine import Store, open_store
from canopy.temporal import client as temporal_client
from canopy.workflows.graph_run import GraphRunV2
from canopy.workflows.scheduled_run import ScheduledRun
from canopy.workflows.session_delivery import SessionDelivery

# --- registry: everything this daemon hosts. New workflows and activities go here. -------

WORKFLOWS: Sequence[type] = (SessionDelivery, ScheduledRun)
"""Workflow classes, served on the main task queue."""

HOST_WORKFLOWS: Sequence[type] = (GraphRunV2,)
"""Workflow classes served on this host's agents queue, beside the activities they
dispatch: graph runs live with the workdir they work in."""


@dataclass(frozen=True)
class Activities:
    """The activities each queue's worker serves, bound to the store they read and write."""

    main: list[Callable[..., Any]]
    """Host-independent work, on the main task queue: session delivery's store calls and
    a scheduled fire's start of a run."""
    agents: list[Callable[..., Any]]
    """Activities that touch a workdir (agents, commands, git), on this host's agents queue."""
    host_local: list[Callable[..., Any]]
    """The store calls the host's workflows make as local activities (so registered here)."""


def activities(store: Store) -> Activities:
    """Every activity this daemon hosts, bound to ``store``."""
    records, control, nodes = RunRecords(store), RunControl(store), NodeActivities(store)
    delivery = DeliveryActivities(store)
    return Activities(
        main=[
            delivery.next_message,
            delivery.fail_delivery,
            ScheduleActivities(store).start_scheduled_run,
        ],
        agents=[
            nodes.dispatch_node,
            check_worktree,
            open_lane_worktree,
            integrate_lane_branch,
            close_lane_worktree,
            HookActivities(store).fire_hooks,
            delivery.deliver_message,
        ],
        host_local=[
            records.read_ahead,
            records.close_spec,
            records.record_launch_end,
            records.queue_settlement,
            records.settle_run,
            control.pause_run,
            control.resume_run,
            control.schedule_resume,
            control.reset_run,
            control.allows_dirty_start,
            control.spec_for_run,
            control.group_session,
            control.record_ignored_signal,
        ],
    )


# -----------------------------------------------------------------------------------------

GRACEFUL_SHUTDOWN = timedelta(seconds=10)
"""How long in-flight activities may finish after a stop signal before being cancelled."""

HEARTBEAT_THROTTLE = timedelta(seconds=1)
"""Node heartbeats reach Temporal at least this often, so a ``graph stop`` (delivered as
an activity cancellation on the next heartbeat) kills the agent within about a second."""

log = logging.getLogger("canopy.worker")


class _JsonFormatter(logging.Formatter):
    """One JSON object per log line, for ``canopy worker --json`` and log collectors."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        return json.dumps(
            {
                "time": self.formatTime(record),
                "level": record.levelname,
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def _configure_logging(json_logs: bool) -> None:
    """Send INFO and above to stdout, as text or JSON lines."""
    handler = logging.StreamHandler(sys.stdout)
    if json_logs:
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


SYNC_ACTIVITY_THREADS = 16
"""Threads for the synchronous activities (store reads and writes, ``git status``), per
worker; the store keeps as many connections open between transactions
(:data:`~canopy.store.engine.IDLE_CONNECTIONS`)."""


def activity_threads() -> ThreadPoolExecutor:
    """The pool a worker runs its synchronous activities on, off the event loop: a slow
    store call then never delays the heartbeats of the activities sharing the loop."""
    return ThreadPoolExecutor(SYNC_ACTIVITY_THREADS, thread_name_prefix="canopy-activity")


def build_workers(client: Client, store: Store, threads: Executor) -> list[Worker]:
    """The main-queue worker and this host's agents-queue worker, from the registry, with
    their activities bound to ``store``; both run their synchronous activities on
    ``threads`` (the caller shuts it down)."""
    hosted = activities(store)
    main = Worker(
        client,
        task_queue=temporal_client.MAIN_TASK_QUEUE,
        workflows=list(WORKFLOWS),
        activities=hosted.main,
        activity_executor=threads,
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
    )
    agents = Worker(
        client,
        task_queue=temporal_client.agents_task_queue(),
        workflows=list(HOST_WORKFLOWS),
        activities=[*hosted.agents, *hosted.host_local],
        activity_executor=threads,
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
    )
    return [main, agents]


SESSION_SWEEP_SECONDS = 60.0
"""How often the daemon looks for queued messages that no delivery workflow is handling."""


async def _sweep_sessions(client: Client, store: Store) -> None:
    """The delivery scheduler's tick: at start and then every minute, wake the sessions
    whose queued messages no workflow is delivering (queued while Temporal was down)."""
    while True:
        try:
            woken = await wake_stalled_sessions(client, store)
        except Exception:  # a failed tick is retried at the next one
            log.exception("the session sweep failed")
        else:
            if woken:
                log.info("woke the delivery of %d session(s) with queued messages", len(woken))
        await asyncio.sleep(SESSION_SWEEP_SECONDS)


def _keep_awake(client: Client) -> asyncio.Task[None] | None:
    """Hold the system's sleep inhibitor while a run is active on this host, unless
    ``[agents] keep_awake = false`` or the system has none (said once, in the log)."""
    if not load_keep_awake():
        log.info("keep-awake is off ([agents] keep_awake = false)")
        return None
    argv = inhibitor_argv()
    if argv is None:
        log.info("keep-awake: no sleep inhibitor here (systemd-inhibit, caffeinate)")
        return None
    host = temporal_client.this_host()
    active = partial(temporal_client.graph_run_active_on, client, host)
    return asyncio.create_task(keep_awake_while(active, SleepInhibitor(argv)))


def _stop_event() -> asyncio.Event:
    """An event set by the first SIGTERM or SIGINT, which starts the graceful shutdown."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):

        def request_stop(name: str = signum.name) -> None:
            log.info("received %s, shutting down", name)
            stop.set()

        loop.add_signal_handler(signum, request_stop)
    return stop


async def serve() -> None:
    """Run both workers until a stop signal (or a worker failure), then shut down."""
    stop = _stop_event()
    client = await temporal_client.connect()
    threads = activity_threads()
    store = open_store()
    workers = build_workers(client, store, threads)
    runs = [asyncio.create_task(worker.run()) for worker in workers]
    log.info(
        "serving task queues %s at %s (namespace %s)",
        ", ".join(worker.task_queue for worker in workers),
        client.service_client.config.target_host,
        client.namespace,
    )
    sweeping = asyncio.create_task(_sweep_sessions(client, store))
    awake = _keep_awake(client)
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([stopping, *runs], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    sweeping.cancel()
    if awake is not None:
        awake.cancel()
    await asyncio.gather(*(worker.shutdown() for worker in workers))
    threads.shutdown(wait=False)
    await asyncio.gather(*runs)  # re-raises a worker failure, making the exit code non-zero
    log.info("worker shut down cleanly")


def _exit(code: int) -> NoReturn:
    """Flush logs and leave without interpreter finalization.

    The SDK's Rust threads can abort a finalizing interpreter (``PyGILState_Release``,
    temporalio/sdk-python#300), which would turn a clean stop into exit code 134.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(json_logs: bool = False) -> None:
    """Entry point: log to stdout, serve until told to stop; exit 0 on a graceful stop."""
    _configure_logging(json_logs)
    try:
        asyncio.run(serve())
    except Refused as refusal:
        log.error("%s", refusal)
        _exit(1)
    except Exception:
        log.exception("worker failed")
        _exit(1)
    _exit(0)


if __name__ == "__main__":
    main()
