"""Steering by update, the commands' own path while a worker serves the run (reference:
docs/control.md "How a command runs"): the run refuses, from its own state, what does not
apply, in the same one line as the store-side check and with nothing left in its history;
a continue answers with what the run did, parked again included; and the signals the
``temporal`` CLI sends steer the run as before."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.errors import Refused
from canopy.ops import control, graphs, runs
from canopy.store.engine import Store
from tests.cli_helpers import run_canopy
from tests.conftest import graph_state, make_specs, update
from tests.engine import eventually, make_graph, node_run_of, temporal

pytestmark = pytest.mark.server
TIMEOUT = 60.0


def dirty_after(spec_id: str) -> dict[str, Any]:
    """A command node that leaves ``scratch.txt`` behind after spec ``spec_id`` only."""
    return {"name": "work", "command": f"test {{{{spec_id}}}} != {spec_id} || echo x > scratch.txt"}


async def events(client: Client, workflow_id: str) -> list[str]:
    """The event types of the workflow's history, as ``temporal workflow show`` lists them."""
    shown = await temporal(client, "workflow", "show", "--workflow-id", workflow_id, "-o", "json")
    return [str(event["eventType"]) for event in json.loads(shown)["events"]]


def named(types: list[str], *parts: str) -> list[str]:
    return [kind for kind in types if any(part in kind for part in parts)]


async def parked_dirty(store: Store, repo: Path) -> tuple[str, str, list[str]]:
    """A run of two bound specs parked on a dirty tree before the second: the graph, its
    workflow id and the specs."""
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [dirty_after(a)], specs=[a, b])
    started = await runs.graph_run(store, graph)
    await eventually(
        lambda: graph_state(store, graph)["status"] == "paused", "the park on a dirty tree", TIMEOUT
    )
    return graph, str(started["workflow_id"]), [a, b]


async def test_an_update_the_run_refuses_is_one_line_and_leaves_no_event(
    serving: Client, home_store: Store, repo: Path, canopy_home: Path
) -> None:
    """The store says running (so its check lets pause and stop through), the run is
    parked: the run's validator refuses them, as the store-side check would have."""
    store = home_store
    graph, workflow_id, _specs = await parked_dirty(store, repo)
    with store.transaction() as rows:
        update(rows, "graphs", graph, status="running")
    before = await events(serving, workflow_id)
    with pytest.raises(Refused) as paused:
        await control.graph_pause(store, graph)
    assert str(paused.value) == "graph build is already paused"
    with pytest.raises(Refused) as stopped:
        await control.graph_stop(store, graph)
    assert str(stopped.value) == "graph build is already paused; nothing is in flight to stop"
    address = {"TEMPORAL_ADDRESS": serving.service_client.config.target_host}
    human = await asyncio.to_thread(run_canopy, canopy_home, "graph", "pause", "build", env=address)
    assert (human.code, human.stderr) == (1, "error: graph build is already paused\n")
    assert await events(serving, workflow_id) == before, "a refused update leaves no event"
    await serving.get_workflow_handle(workflow_id).terminate("test over")


async def test_a_continue_answers_with_the_blocker_the_run_parked_again_on(
    serving: Client, home_store: Store, repo: Path
) -> None:
    store = home_store
    graph, workflow_id, (_a, b) = await parked_dirty(store, repo)
    first = graph_state(store, graph)["blocker"]
    again = await control.graph_continue(store, graph)
    assert (again["status"], again["signal"]) == ("paused", "continue_run")
    assert again["blocker"]["kind"] == "dirty_tree"
    assert again["blocker"] != first, "a fresh blocker from the re-check"
    assert again["note"] == f"still paused: {again['blocker']['message']}"
    history = await events(serving, workflow_id)
    assert len(named(history, "UPDATE_ACCEPTED")) == len(named(history, "UPDATE_COMPLETED")) == 1
    assert named(history, "SIGNALED") == [], "asked by update, not by signal"

    (repo / "scratch.txt").unlink()
    resumed = await control.graph_continue(store, graph)
    assert (resumed["status"], resumed["blocker"], resumed["note"]) in (
        ("running", None, None),
        ("completed", None, None),
    )
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert node_run_of(store, b) is not None


async def test_signals_from_the_temporal_cli_steer_the_run_as_before(
    serving: Client, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    store = home_store
    (alpha,) = make_specs(store, "alpha")
    gate = tmp_path / "gate"
    hold = {"name": "hold", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [hold], specs=[alpha])
    started = await runs.graph_run(store, graph)
    workflow = ["--workflow-id", str(started["workflow_id"])]
    await eventually(lambda: node_run_of(store, alpha, "running"), "alpha's node", TIMEOUT)

    await temporal(serving, "workflow", "signal", *workflow, "--name", "stop")
    stopped = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert (stopped["status"], stopped["blocker"]["kind"]) == ("paused", "stopped"), stopped
    gate.touch()
    await temporal(serving, "workflow", "signal", *workflow, "--name", "continue_run")
    await eventually(
        lambda: graph_state(store, graph)["status"] == "completed", "the run to complete", TIMEOUT
    )
    history = await events(serving, str(started["workflow_id"]))
    assert len(named(history, "SIGNALED")) == 2
    assert named(history, "UPDATE") == []
    assert graphs.graph_get(store, graph)["runs"][0]["status"] == "completed"
