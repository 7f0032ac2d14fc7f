"""Run control on the real dev server: the guard between specs and its ways out, pause,
stop, reset, and warm sessions for context groups (reference: "Dirty-tree guard between
specs", "Context groups")."""

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from canopy.contracts.graph_run import ContinueRequest
from canopy.ops import graphs, queues, runs, specs
from canopy.store.engine import Store
from tests import engine
from tests.conftest import graph_state, make_specs
from tests.engine import agent_runs, alive, eventually, fake_node, git, make_graph, make_queue

pytestmark = pytest.mark.server
TIMEOUT = 60.0


store = engine.home_store
"""Here the store is the one the worker's activities write: this test's data dir."""


def dirty_after(spec_id: str) -> dict[str, Any]:
    """A command node that leaves ``scratch.txt`` behind after spec ``spec_id`` only."""
    return {"name": "work", "command": f"test {{{{spec_id}}}} != {spec_id} || echo x > scratch.txt"}


def graph_row(store: Store, graph: str) -> dict[str, Any]:
    return graph_state(store, graph)


async def wait_until(store: Store, graph: str, predicate: Any, what: str) -> dict[str, Any]:
    """Poll the graph's store row until ``predicate(row)`` holds; that row."""

    def satisfied() -> dict[str, Any] | None:
        row = graph_row(store, graph)
        return row if predicate(row) else None

    return await eventually(satisfied, what, TIMEOUT)


async def paused_before(store: Store, graph: str, spec_id: str) -> dict[str, Any]:
    row = await wait_until(
        store,
        graph,
        lambda r: (
            r["status"] == "paused"
            and (r["blocker"] or {}).get("next_spec", {}).get("id") == spec_id
        ),
        f"a pause before {spec_id}",
    )
    blocker: dict[str, Any] = row["blocker"]
    return blocker


async def signal(client: Client, store: Store, graph: str, name: str, *args: Any) -> None:
    run = (await graphs.graph_get_async(store, graph))["active_run"]
    handle = client.get_workflow_handle(run["workflow_id"])
    await handle.signal(name, *args)


def status_of(store: Store, spec_id: str) -> str:
    return str(specs.spec_get(store, spec_id)["status"])


async def test_a_dirty_tree_between_specs_pauses_with_a_blocker_and_each_way_out_works(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b, c = make_specs(store, "alpha", "beta", "gamma")
    queue = make_queue(store, [a, b, c])
    graph = make_graph(store, repo, [dirty_after(a)])
    await runs.graph_run(store, graph, queue=queue)

    blocker = await paused_before(store, graph, b)
    assert blocker["kind"] == "dirty_tree"
    assert blocker["dirty_paths"] == ["scratch.txt"]
    assert blocker["dirty_count"] == 1
    assert "scratch.txt" in blocker["message"]
    assert blocker["ways_out"] == [
        "run the next spec anyway: `canopy graph continue build --mode run_from_node`",
        "clean the tree by hand, then skip the next spec: "
        "`canopy graph continue build --mode skip_next_spec`",
        "allow a dirty tree: set allow_dirty_start in the graph "
        "(`canopy graph edit build --file FILE`), then: `canopy graph continue build`",
        "clean the tree by hand, then: `canopy graph continue build`",
    ]
    assert (status_of(store, a), status_of(store, b)) == ("completed", "pending")
    listed = next(g for g in graphs.graph_list(store) if g["id"] == graph)
    assert (listed["status"], listed["blocker"]["kind"]) == ("paused", "dirty_tree")
    assert graphs.graph_get(store, graph)["blocker"]["kind"] == "dirty_tree"

    # plain continue while still dirty: the guard refuses again, the graph stays paused
    before = graph_row(store, graph)["updated_at"]
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    row = await wait_until(store, graph, lambda r: r["updated_at"] != before, "the re-check")
    assert (row["status"], row["blocker"]["kind"]) == ("paused", "dirty_tree")

    # run_from_node: a directed start of beta, not refused by the guard
    await signal(serving, store, graph, "continue_run", ContinueRequest(mode="run_from_node"))
    blocker = await paused_before(store, graph, c)  # tree still dirty after beta
    assert status_of(store, b) == "completed"

    # clean by hand, then skip_next_spec: gamma is skipped and the run settles
    (repo / "scratch.txt").unlink()
    await signal(serving, store, graph, "skip_next_spec")
    settled = await wait_until(store, graph, lambda r: r["status"] == "completed", "the settle")
    assert settled["blocker"] is None
    assert status_of(store, c) == "skipped"


async def test_allow_dirty_start_then_continue_lets_the_run_advance(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [dirty_after(a)])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b]))
    await paused_before(store, graph, b)
    graphs.graph_edit(store, graph, {"allow_dirty_start": True})
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    await wait_until(store, graph, lambda r: r["status"] == "completed", "the settle")
    assert status_of(store, b) == "completed"


async def test_plain_continue_after_cleaning_proceeds_and_clears_the_blocker(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [dirty_after(a)], specs=[a, b])
    await runs.graph_run(store, graph)
    await paused_before(store, graph, b)
    (repo / "scratch.txt").unlink()
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    row = await wait_until(store, graph, lambda r: r["status"] != "paused", "the resume")
    assert row["blocker"] is None
    settled = await runs.wait_until_settled(store, graph, TIMEOUT)
    assert settled["status"] == "completed"


async def test_the_guard_runs_after_a_failed_spec_too(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    node = {
        "name": "work",
        "command": f"test {{{{spec_id}}}} != {a} || (echo x > scratch.txt; exit 1)",
    }
    graph = make_graph(store, repo, [node])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b]))
    await paused_before(store, graph, b)
    assert status_of(store, a) == "failed"


async def test_pause_lands_at_the_next_spec_boundary_and_continue_resumes(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    gate = tmp_path / "gate"
    node = {"name": "work", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [node])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b]))
    await wait_until(store, graph, lambda r: status_of(store, a) == "in_progress", "alpha to start")
    await signal(serving, store, graph, "pause")
    gate.touch()
    blocker = await paused_before(store, graph, b)
    assert blocker["kind"] == "paused"
    assert (status_of(store, a), status_of(store, b)) == ("completed", "pending")
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    await wait_until(store, graph, lambda r: r["status"] == "completed", "the settle")


@pytest.mark.parametrize("name", ["pause", "reset"])
async def test_a_request_during_an_executions_last_spec_outlives_continue_as_new(
    serving: Client,
    store: Store,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    """A ``pause`` or ``reset`` sent while the spec that ends an execution runs is acted
    on, not dropped with the execution that received it."""
    monkeypatch.setenv("CANOPY_SPECS_PER_EXECUTION", "1")  # a new execution after each spec
    a, b = make_specs(store, "alpha", "beta")
    gate = tmp_path / "gate"
    node = {"name": "work", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [node])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b]))
    await wait_until(store, graph, lambda r: status_of(store, a) == "in_progress", "alpha to start")
    await signal(serving, store, graph, name)
    gate.touch()
    if name == "pause":
        assert (await paused_before(store, graph, b))["kind"] == "paused"
        assert (status_of(store, a), status_of(store, b)) == ("completed", "pending")
        await signal(serving, store, graph, "continue_run", ContinueRequest())
        await wait_until(store, graph, lambda r: r["status"] == "completed", "the settle")
    else:
        await wait_until(store, graph, lambda r: r["status"] == "idle", "the reset")
        assert status_of(store, b) == "pending"


async def test_stop_kills_the_node_marks_the_spec_interrupted_and_pauses(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    (a,) = make_specs(store, "alpha")
    pid_file = tmp_path / "agent.pid"
    node = {"name": "work", "command": f"echo $$ > {pid_file}; sleep 60"}
    graph = make_graph(store, repo, [node], specs=[a])
    started = await runs.graph_run(store, graph)
    await wait_until(store, graph, lambda r: pid_file.exists() and pid_file.read_text(), "the node")
    pid = int(pid_file.read_text())
    await signal(serving, store, graph, "stop")
    blocker = await paused_before(store, graph, a)
    assert blocker["kind"] == "stopped"
    assert blocker["node"] == "work"
    assert status_of(store, a) == "pending"
    await eventually(lambda: not alive(pid), "the node's process group to be killed", TIMEOUT)
    info = graphs.graph_get(store, graph)
    assert [n["status"] for n in info["node_runs"]] == ["interrupted"]
    assert info["runs"][0]["id"] == started["run_id"]

    # continue: the interrupted spec runs again from the start
    pid_file.unlink()
    graphs.graph_edit(store, graph, {"nodes": [{"name": "work", "command": "true"}]})
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    await wait_until(store, graph, lambda r: r["status"] == "completed", "the settle")
    assert status_of(store, a) == "completed"


async def test_reset_of_an_active_run_returns_the_graph_to_idle_and_reopens_bound_specs(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    node = {"name": "work", "command": f"test {{{{spec_id}}}} = {a} || sleep 60"}
    graph = make_graph(store, repo, [node], specs=[a, b])
    await runs.graph_run(store, graph)
    await wait_until(store, graph, lambda r: status_of(store, b) == "in_progress", "beta to start")
    assert status_of(store, a) == "completed"
    await signal(serving, store, graph, "reset")
    row = await wait_until(store, graph, lambda r: r["status"] == "idle", "the reset")
    assert row["blocker"] is None
    assert (status_of(store, a), status_of(store, b)) == ("pending", "pending")
    assert graphs.graph_get(store, graph)["runs"][0]["status"] == "reset"


async def test_grouped_specs_resume_the_last_completed_siblings_session(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    g1, g2, loner, g3, g4 = make_specs(store, "g1", "g2", "loner", "g3", "g4")
    queue = queues.queue_create(store, "q")["id"]
    for spec_id, group in ((g1, "auth"), (g2, "auth"), (loner, None), (g3, "auth"), (g4, "auth")):
        queues.queue_add_spec(store, queue, spec_id, group=group)
    # add_spec keeps the group together: g1, g2, g3, g4, loner
    implement = fake_node(
        "implement", "FAKE: write out/{{spec_id}}.txt x\nFAKE: commit {{spec_id}}"
    )
    check = {"name": "check", "command": f"test {{{{spec_id}}}} != {g3}"}  # g3 fails here
    graph = make_graph(store, repo, [implement, check])
    await runs.graph_run(store, graph, queue=queue)
    await runs.wait_until_settled(store, graph, TIMEOUT)
    by_spec = {r["prompt"].splitlines()[0]: r for r in agent_runs(record)}
    assert by_spec["g1"]["resumed"] is None
    assert by_spec["g2"]["resumed"] == by_spec["g1"]["session_id"]
    assert by_spec["g3"]["resumed"] == by_spec["g2"]["session_id"]
    assert by_spec["g4"]["resumed"] == by_spec["g2"]["session_id"], (
        "a failed sibling's session is not reused"
    )
    assert by_spec["loner"]["resumed"] is None
    assert git(repo, "status", "--porcelain") == ""


async def test_the_guard_runs_after_a_skipped_and_after_an_interrupted_spec(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    a, b, c = make_specs(store, "alpha", "beta", "gamma")
    gate = tmp_path / "gate"
    node = {
        "name": "work",
        "command": f"test {{{{spec_id}}}} != {a} || echo x > scratch.txt; "
        f"test {{{{spec_id}}}} != {c} || until [ -e {gate} ]; do sleep 0.05; done",
    }
    graph = make_graph(store, repo, [node])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b, c]))
    await paused_before(store, graph, b)
    # skip beta without cleaning: the guard runs after the skipped spec and pauses again
    await signal(serving, store, graph, "skip_next_spec")
    blocker = await paused_before(store, graph, c)
    assert (blocker["kind"], status_of(store, b)) == ("dirty_tree", "skipped")
    # a directed start of gamma, stopped mid-node: interrupted, then the guard re-checks
    await signal(serving, store, graph, "continue_run", ContinueRequest(mode="run_from_node"))
    await wait_until(store, graph, lambda r: status_of(store, c) == "in_progress", "gamma")
    await signal(serving, store, graph, "stop")
    await wait_until(
        store, graph, lambda r: (r["blocker"] or {}).get("kind") == "stopped", "the stop"
    )
    before = graph_row(store, graph)["updated_at"]
    await signal(serving, store, graph, "continue_run", ContinueRequest())
    row = await wait_until(store, graph, lambda r: r["updated_at"] != before, "the re-check")
    assert (row["status"], row["blocker"]["kind"]) == ("paused", "dirty_tree")
    assert row["blocker"]["next_spec"]["id"] == c


async def test_the_guard_runs_across_continue_as_new(
    serving: Client, store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_SPECS_PER_EXECUTION", "1")  # a new execution after each spec
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [dirty_after(a)])
    await runs.graph_run(store, graph, queue=make_queue(store, [a, b]))
    blocker = await paused_before(store, graph, b)
    assert blocker["kind"] == "dirty_tree"
