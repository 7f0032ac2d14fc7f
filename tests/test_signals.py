"""No signal can wedge a run: sent with the real ``temporal`` CLI, as users
steer runs, a control signal with no input takes its defaults, and one that does not fit
(input that is no JSON, an unknown mode, wrong types, input where none is taken, a name
Canopy does not know) is ignored: kept on the run's summary and as a notification, shown in the
run's details, while the status query keeps answering and the next valid signal, from the
CLI or from ``canopy graph continue``, steers the run on."""

import json
from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.ops import control, graphs, notifications, queues, runs
from canopy.store.engine import Store
from tests.conftest import make_specs
from tests.documented import quoted, shape
from tests.engine import eventually, node_run_of, temporal

pytestmark = pytest.mark.server
TIMEOUT = 60.0

BAD_SIGNALS: list[tuple[list[str], str]] = [
    (
        ["--name", "continue_run", "--input", '{"mode": "bogus"}'],
        "continue_run: mode: Input should be 'recheck', 'run_from_node' or 'skip_next_spec'",
    ),
    (
        ["--name", "continue_run", "--input", '"hello"'],
        'continue_run takes an object like {"mode": "recheck"}, got "hello"',
    ),
    (
        ["--name", "continue_run", "--input", '{"node": 5}'],
        "continue_run: node: Input should be a valid string",
    ),
    (
        ["--name", "continue_run", "--input-meta", "encoding=text/csv", "--input", "a,b"],
        "continue_run: its input could not be decoded (Unknown payload encoding text/csv)",
    ),
    (["--name", "pause", "--input", "[1, 2]"], "pause takes no input, got [1, 2]"),
    (
        ["--name", "frobnicate"],
        "unknown signal 'frobnicate' (a graph run takes continue_run, skip_next_spec, "
        "pause, stop, reset)",
    ),
]


def ignored_reasons(store: Store, graph: str) -> list[str]:
    info = graphs.graph_get(store, graph)
    summary = info["runs"][0]["summary"] or {}
    return [entry["reason"] for entry in summary.get("ignored_signals", [])]


async def test_bad_signals_are_ignored_visibly_and_the_run_stays_steerable(
    serving: Client, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    store = home_store
    alpha, beta, gamma = make_specs(store, "alpha", "beta", "gamma")
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in (alpha, beta, gamma):
        queues.queue_add_spec(store, queue, spec_id)
    hold = {
        "name": "hold",
        "command": f"while [ ! -e {tmp_path}/gate-{{{{spec_id}}}} ]; do sleep 0.05; done",
    }
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": [hold]})["id"]
    started = await runs.graph_run(store, graph, queue=queue)
    workflow = ["--workflow-id", started["workflow_id"]]

    await eventually(lambda: node_run_of(store, alpha, "running"), "alpha's node")
    await control.graph_pause(store, graph)
    (tmp_path / f"gate-{alpha}").touch()
    paused = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert paused["blocker"]["kind"] == "paused", paused

    for arguments, _reason in BAD_SIGNALS:
        await temporal(serving, "workflow", "signal", *workflow, *arguments)
    expected = [reason for _arguments, reason in BAD_SIGNALS]
    await eventually(
        lambda: len(ignored_reasons(store, graph)) >= len(expected),
        "every bad signal recorded",
        TIMEOUT,
    )
    assert ignored_reasons(store, graph) == expected
    status = json.loads(
        await temporal(serving, "workflow", "query", *workflow, "--name", "status", "-o", "json")
    )
    assert status["queryResult"][0]["waiting_for"] == "continue (paused)", status
    details = await temporal(serving, "workflow", "metadata", *workflow)
    documented = quoted("control.md", "ignored signal continue_run at ")
    last_line = details.strip().splitlines()[-1]
    assert shape(documented.replace("continue_run", "frobnicate")).fullmatch(last_line), details
    assert last_line.endswith(expected[-1]), details
    texts = [n["text"] for n in notifications.notifications_list(store)["notifications"]]
    assert f"graph g: run {started['run_id']} ignored signal frobnicate: {expected[-1]}" in texts
    assert graphs.graph_get(store, graph)["status"] == "paused", "still paused, steerable"

    await temporal(serving, "workflow", "signal", *workflow, "--name", "continue_run")  # defaults
    await eventually(lambda: node_run_of(store, beta, "running"), "beta's node")
    await control.graph_pause(store, graph)
    (tmp_path / f"gate-{beta}").touch()
    await eventually(
        lambda: graphs.graph_get(store, graph)["status"] == "paused", "the pause before gamma"
    )
    (tmp_path / f"gate-{gamma}").touch()
    await control.graph_continue(store, graph)
    await eventually(
        lambda: graphs.graph_get(store, graph)["status"] == "completed", "the run to complete"
    )
    assert ignored_reasons(store, graph) == expected, "kept after the run settled"
