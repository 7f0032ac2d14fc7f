"""The worker's event loop never waits on the store.

Both Temporal workers of a daemon share one event loop, and every node heartbeats on it.
Store activities run on the worker's thread pool, and the node, hook and delivery
activities move their store calls to threads, so a store call stuck behind a lock (a busy
SQLite file, a slow Postgres) delays nothing else.
"""

import sqlite3
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.ops import graphs, runs
from canopy.paths import run_log_dir, sqlite_path
from canopy.store.engine import Store
from tests.conftest import make_specs
from tests.engine import eventually, node_run_of

pytestmark = pytest.mark.server
NODE_ACTIVITY = "dispatch_node"
HEARTBEAT_TIMEOUT_SECONDS = 2
HELD_SECONDS = 3 * HEARTBEAT_TIMEOUT_SECONDS / 2
"""How long the test keeps heartbeats under watch while the store is locked: longer than
the heartbeat timeout, shorter than SQLite's busy timeout (10 s)."""


def holding_graph(store: Store, name: str, repo: Path, spec: str, release: Path) -> str:
    """A graph bound to ``spec`` whose one command node runs until ``release`` exists."""
    hold = {"name": "hold", "command": f"while [ ! -e {release} ]; do sleep 0.05; done"}
    definition = {"name": name, "workdir": str(repo), "nodes": [hold], "specs": [spec]}
    graph_id: str = graphs.graph_create(store, definition)["id"]
    return graph_id


async def pending(client: Client, workflow_id: str, activity_type: str) -> dict[str, float]:
    """The attempt and last heartbeat (epoch seconds) of the workflow's pending activity
    of ``activity_type``; empty when there is none."""
    description = await client.get_workflow_handle(workflow_id).describe()
    for activity in description.raw_description.pending_activities:
        if activity.activity_type.name == activity_type:
            beat = activity.last_heartbeat_time
            return {
                "attempt": activity.attempt,
                "state": activity.state,
                "heartbeat": beat.seconds + beat.nanos / 1e9 if beat.seconds else 0.0,
            }
    return {}


async def test_heartbeats_keep_flowing_while_a_store_call_waits_on_a_lock(
    serving: Client,
    home_store: Store,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CANOPY_HEARTBEAT_TIMEOUT", str(HEARTBEAT_TIMEOUT_SECONDS))
    (alpha, beta) = make_specs(home_store, "alpha", "beta")
    release_a, release_b = tmp_path / "release-a", tmp_path / "release-b"
    a = holding_graph(home_store, "a", repo, alpha, release_a)
    b = holding_graph(home_store, "b", repo, beta, release_b)
    run_a = (await runs.graph_run(home_store, a))["workflow_id"]
    started_b = await runs.graph_run(home_store, b)
    run_b = started_b["workflow_id"]
    await eventually(lambda: node_run_of(home_store, alpha, "running"), "a's node to run")
    node_b = await eventually(lambda: node_run_of(home_store, beta, "running"), "b's node to run")
    b_ended = run_log_dir(started_b["run_id"], "nodes", node_b) / "exit"

    lock = sqlite3.connect(sqlite_path(), isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        release_b.touch()  # b's node ends; its activity's record of the end waits on the lock
        await eventually(b_ended.exists, "b's node process to end")
        locked_at = time.time()
        watched = await eventually(
            lambda: _beating_since(serving, run_a, locked_at + HELD_SECONDS),
            "a's node to heartbeat while b's store write waits",
        )
        assert watched["attempt"] == 1, "a's node never missed its heartbeat timeout"
        assert await pending(serving, run_b, NODE_ACTIVITY), "b's write was still waiting"
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        release_a.touch()
        release_b.touch()
    for graph in (a, b):
        settled = await runs.wait_until_settled(home_store, graph, 60)
        assert settled["status"] == "completed", settled


async def _beating_since(client: Client, workflow_id: str, since: float) -> dict[str, float]:
    """The node activity's pending state once it has heartbeat after ``since``."""
    state = await pending(client, workflow_id, NODE_ACTIVITY)
    return state if state and state["heartbeat"] > since else {}
