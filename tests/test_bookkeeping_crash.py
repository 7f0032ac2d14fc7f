"""Exactly once, with the bookkeeping merged into the node activity and local activities:
a worker SIGKILLed between a node's end and the record of it, or during a
local activity, leaves every spec completed once and every hook fired once.

The store is held still with SQLite's EXCLUSIVE lock (from this test's process), so the
worker is killed while its store call waits, at the point each test names; SQLite's busy
timeout (10 s) is longer than the lock is held.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from canopy.contracts.graph_run import SIGNAL_CONTINUE, ContinueRequest
from canopy.ops import control, graphs, queues, runs
from canopy.paths import run_log_dir, sqlite_path
from canopy.store.engine import Store, open_store
from canopy.temporal import client as temporal_client
from tests.conftest import make_specs
from tests.daemons import TIMEOUT, Daemons
from tests.engine import eventually, file_lines, node_run_of
from tests.test_crash import completed_passages, daemons, hook_runs

__all__ = ["daemons"]  # the fixture, shared with the other crash tests

pytestmark = pytest.mark.server


@contextmanager
def store_locked() -> Iterator[None]:
    """Every store call of every process waits while this holds."""
    lock = sqlite3.connect(sqlite_path(), isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def gated_queue_run(store: Store, repo: Path, tmp_path: Path) -> tuple[str, str, list[str]]:
    """A queue of two specs through one command node that logs its spec and then waits for
    the gate; an ``on_spec_completed`` and an ``on_blocked`` hook log theirs."""
    effects, gate = tmp_path / "effects.log", tmp_path / "gate"
    node = {
        "name": "work",
        "command": f"echo {{{{spec_id}}}} >> {effects}; while [ ! -e {gate} ]; do sleep 0.05; done",
    }
    hooks = {
        "on_spec_completed": [{"command": f"echo {{{{spec_id}}}} >> {tmp_path / 'completed'}"}],
        "on_blocked": [{"command": f"echo blocked >> {tmp_path / 'blocked'}"}],
    }
    spec_ids = make_specs(store, "alpha", "beta")
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in spec_ids:
        queues.queue_add_spec(store, queue, spec_id)
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [node], "hooks": hooks}
    )["id"]
    return graph, queue, spec_ids


def assert_each_once(store: Store, run_id: str, tmp_path: Path, spec_ids: list[str]) -> None:
    """Every spec's node ran once, its passage completed once, its hook fired once."""
    assert completed_passages(store, run_id) == spec_ids
    assert file_lines(tmp_path / "effects.log") == spec_ids, "each node ran once"
    assert file_lines(tmp_path / "completed") == spec_ids, "each spec's hook fired once"
    assert all(status == "succeeded" for status, _ in hook_runs(store))


async def test_a_worker_killed_between_a_nodes_end_and_its_record_runs_each_spec_once(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    graph, queue, (alpha, beta) = gated_queue_run(store, repo, tmp_path)
    daemons.start_worker()
    started = await runs.graph_run(store, graph, queue=queue)
    node_run = await eventually(lambda: node_run_of(store, alpha, "running"), "alpha's node")
    exit_file = run_log_dir(started["run_id"], "nodes", node_run) / "exit"
    with store_locked():
        (tmp_path / "gate").touch()  # the node ends; recording its end waits on the lock
        await eventually(exit_file.exists, "alpha's node process to end", TIMEOUT)
        daemons.kill_worker()
    daemons.start_worker()
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert_each_once(store, started["run_id"], tmp_path, [alpha, beta])
    assert not (tmp_path / "blocked").exists()


async def workflow_task_started_after_signal(workflow_id: str) -> bool:
    """Whether the workflow task handling the latest signal has started and not ended:
    the worker is inside it, running its local activities."""
    client = await temporal_client.connect()
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    types = [event.event_type for event in history.events]
    if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in types:
        return False
    after = types[
        len(types) - types[::-1].index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) :
    ]
    return after[-1:] == [EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED]


async def test_a_worker_killed_during_a_local_activity_runs_each_spec_once(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    store = open_store()
    graph, queue, (alpha, beta) = gated_queue_run(store, repo, tmp_path)
    daemons.start_worker()
    started = await runs.graph_run(store, graph, queue=queue)
    await eventually(lambda: node_run_of(store, alpha, "running"), "alpha's node")
    await control.graph_pause(store, graph)
    (tmp_path / "gate").touch()
    paused = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "paused"), paused
    client = await temporal_client.connect()
    with store_locked():
        # the continue's workflow task reads the store in a local activity, which waits
        await client.get_workflow_handle(started["workflow_id"]).signal(
            SIGNAL_CONTINUE, ContinueRequest()
        )
        await eventually(
            lambda: workflow_task_started_after_signal(started["workflow_id"]),
            "the continue's workflow task to start",
            TIMEOUT,
        )
        daemons.kill_worker()
    daemons.start_worker()
    await eventually(
        lambda: graphs.graph_get(store, graph)["status"] == "completed",
        "the continued run to complete",
        TIMEOUT,
    )
    assert_each_once(store, started["run_id"], tmp_path, [alpha, beta])
    assert file_lines(tmp_path / "blocked") == ["blocked"], "the pause's hook fired once"
