"""GraphRunV2 on the real dev server: queue drains, transitions, settling, the launch guard."""

from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.activities import nodes
from canopy.activities.bookkeeping import load_step
from canopy.cli import graph_views
from canopy.contracts.graph_run import MAX_NODE_TIMEOUT_MINUTES, NodeLaunch
from canopy.errors import Refused
from canopy.ops import graphs, queues, runs, specs
from canopy.store.engine import Store
from canopy.store.queries import graph_record
from canopy.temporal import client as temporal_client
from tests import engine
from tests.conftest import make_specs, snapshot, update
from tests.engine import fake_node, make_graph, settle

pytestmark = pytest.mark.server


store = engine.home_store
"""Here the store is the one the worker's activities write: this test's data dir."""


def node_trail(store: Store, run_id: str) -> list[tuple[str, str, str]]:
    """(spec, node, status) of every node run, in launch order."""
    with store.transaction() as rows:
        found = rows(
            "SELECT spec_id, node, status FROM node_runs WHERE run_id = :run_id ORDER BY id",
            {"run_id": run_id},
        )
    return [(row["spec_id"], row["node"], row["status"]) for row in found]


def outcomes(store: Store, run_id: str) -> list[tuple[str, str | None]]:
    with store.transaction() as rows:
        found = rows(
            "SELECT spec_id, outcome FROM run_specs WHERE run_id = :run_id ORDER BY id",
            {"run_id": run_id},
        )
    return [(row["spec_id"], row["outcome"]) for row in found]


IMPLEMENT = fake_node(
    "implement", "FAKE: write out/{{spec_id}}.txt done\nFAKE: commit implement {{spec_id}}"
)
CHECK = {"name": "check", "command": "test -f out/{{spec_id}}.txt"}


async def test_a_queue_drains_through_a_multi_node_graph(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b, c = make_specs(store, "alpha", "beta", "gamma")
    queue = queues.queue_create(store, "nightly")["id"]
    for spec in (a, b, c):
        queues.queue_add_spec(store, queue, spec)
    graph = make_graph(store, repo, [IMPLEMENT, CHECK])
    result = await settle(serving, store, graph, queue="nightly")
    assert result["status"] == "completed", result
    assert result["blocker"] is None
    run_id = result["run_id"]
    assert node_trail(store, run_id) == [
        (spec, node, "succeeded") for spec in (a, b, c) for node in ("implement", "check")
    ]
    assert outcomes(store, run_id) == [(a, "completed"), (b, "completed"), (c, "completed")]
    assert [s["status"] for s in specs.spec_list(store)] == ["completed"] * 3
    listing = queues.queue_list(store, queue)
    assert [m["spec_id"] for m in listing["members"]] == [a, b, c], "membership unchanged"
    assert (listing["latest_run"]["id"], listing["latest_run"]["status"]) == (run_id, "completed")
    assert listing["latest_run"]["outcomes"] == {spec: "completed" for spec in (a, b, c)}
    info = graphs.graph_get(store, graph)
    assert info["status"] == "completed"
    progress = info["queue_progress"]
    assert (progress["run_id"], progress["queue_id"]) == (run_id, queue)
    assert [(m["spec_id"], m["outcome"], m["nodes"]) for m in progress["members"]] == [
        (spec, "completed", ["implement", "check"]) for spec in (a, b, c)
    ]


async def test_a_failed_node_follows_on_failure_and_max_visits_bounds_loops(
    serving: Client, store: Store, repo: Path
) -> None:
    (spec,) = make_specs(store, "alpha")
    fix = fake_node("fix", "FAKE: write fixed.txt ok\nFAKE: commit fix", next="test")
    test = {"name": "test", "command": "test -f fixed.txt", "on_failure": "fix"}
    graph = make_graph(store, repo, [IMPLEMENT, test, fix], specs=[spec])
    result = await settle(serving, store, graph)
    assert result["status"] == "completed", result
    assert [(node, status) for _, node, status in node_trail(store, result["run_id"])] == [
        ("implement", "succeeded"),
        ("test", "failed"),
        ("fix", "succeeded"),
        ("test", "succeeded"),
    ]


async def test_exceeding_max_visits_fails_the_spec(
    serving: Client, store: Store, repo: Path
) -> None:
    (spec,) = make_specs(store, "alpha")
    looping = {"name": "retry", "command": "exit 1", "on_failure": "retry", "max_visits": 2}
    graph = make_graph(store, repo, [looping], specs=[spec])
    result = await settle(serving, store, graph)
    assert result["status"] == "failed"
    assert [node for _, node, _ in node_trail(store, result["run_id"])] == ["retry", "retry"]
    assert specs.spec_get(store, spec)["status"] == "failed"


async def test_a_bound_spec_run_fails_at_the_first_failed_spec(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    graph = make_graph(store, repo, [{"name": "check", "command": "exit 3"}], specs=[a, b])
    result = await settle(serving, store, graph)
    assert result["status"] == "failed"
    assert result["blocker"]["node"] == "check"
    assert result["blocker"]["spec_id"] == a
    assert specs.spec_get(store, a)["status"] == "failed"
    assert specs.spec_get(store, b)["status"] == "pending"


async def test_a_drained_queue_with_a_failed_member_settles_failed_naming_it(
    serving: Client, store: Store, repo: Path
) -> None:
    a, b = make_specs(store, "alpha", "beta")
    queue = queues.queue_create(store, "q")["id"]
    queues.queue_add_spec(store, queue, a)
    queues.queue_add_spec(store, queue, b)
    check = {"name": "check", "command": f"test {{{{spec_id}}}} != {a}"}
    graph = make_graph(store, repo, [check])
    result = await settle(serving, store, graph, queue=queue)
    assert result["status"] == "failed"
    assert result["blocker"]["failed_specs"] == [a]
    assert "alpha" in result["blocker"]["message"]
    assert specs.spec_get(store, b)["status"] == "completed"


async def test_the_launch_guard_refuses_dirty_trees_non_repos_and_second_runs(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [{"name": "wait", "command": "sleep 30"}], specs=[spec])
    (repo / "scratch.txt").write_text("dirty")
    with pytest.raises(Refused, match=r"is dirty \(1 dirty path: scratch.txt\)"):
        await runs.graph_run(store, graph)
    (repo / "scratch.txt").unlink()
    with pytest.raises(Refused, match="is not a git work tree"):
        await runs.graph_run(store, graph, workdir=str(tmp_path))
    with store.transaction() as rows:
        assert rows("SELECT id FROM runs", {}) == []
    first = await runs.graph_run(store, graph)
    with pytest.raises(Refused, match=f"already has an active run {first['run_id']}"):
        await runs.graph_run(store, graph)
    await serving.get_workflow_handle(first["workflow_id"]).terminate("test over")


async def test_a_failed_node_run_records_why_and_graph_info_shows_it(
    serving: Client,
    store: Store,
    repo: Path,
    canopy_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program that is there but cannot be executed (the preflight finds it on PATH):
    the runner's reason, not a bare ``exit code 127``, is the node run's error."""
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [IMPLEMENT], specs=[spec])
    broken = canopy_home / "broken-claude"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    (canopy_home / "config.toml").write_text(f'[platforms.claude]\nexecutable = "{broken}"\n')
    result = await settle(serving, store, graph)
    assert result["status"] == "failed"
    reason = f"cannot run {broken}: [Errno 8] Exec format error: '{broken}'"
    (node_run,) = graphs.graph_get(store, graph)["node_runs"]
    assert (node_run["status"], node_run["error"]) == ("failed", reason)
    assert node_run["host"] == temporal_client.this_host(), "the host that tried to start it"
    monkeypatch.setenv("COLUMNS", "1000")
    graph_views.show_graph(graphs.graph_info(store, graph))
    (row,) = [line for line in capsys.readouterr().out.splitlines() if reason in line]
    assert f" {node_run['host']} " in row, "the node runs table names the host"


async def test_a_run_whose_agent_cannot_launch_here_is_refused_and_nothing_starts(
    serving: Client, store: Store, repo: Path, canopy_home: Path
) -> None:
    """Without the CLI a node needs, every spec would fail in a fraction of a second: the
    start is refused in one line naming the platform, the program and the fix."""
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [IMPLEMENT], specs=[spec])
    config = canopy_home / "config.toml"
    config.write_text('[platforms.claude]\nexecutable = "no-such-claude"\n')
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        await runs.graph_run(store, graph)
    assert refused.value.message == (
        "graph build needs platform claude, but no-such-claude is not installed (not on "
        "PATH); fix: install it, or set [platforms.claude] executable in config.toml, or "
        "use demo"
    )
    config.write_text("[platforms.claude]\nbogus = true\n")
    with pytest.raises(Refused, match=r"platforms\.claude\.bogus: Extra inputs are not permitted"):
        await runs.graph_run(store, graph)
    assert snapshot(store) == before


async def test_a_run_with_nothing_to_do_is_refused(store: Store, repo: Path) -> None:
    """No bound specs and no queue: a run would "complete" having done nothing."""
    graph = make_graph(store, repo, [IMPLEMENT])
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        await runs.graph_run(store, graph)
    assert refused.value.message == (
        "graph build has no bound specs, so a run without a queue has nothing to do; run it "
        "over a queue (canopy graph run build --queue QUEUE) or bind specs (graph edit, specs)"
    )
    assert snapshot(store) == before


async def test_a_node_whose_activity_fails_records_the_activity_error(
    serving: Client, store: Store, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(launch: NodeLaunch) -> None:
        raise Refused(f"no room for node run {launch.node_run_id}")  # not retried

    monkeypatch.setattr(nodes, "node_files", broken)
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [{"name": "check", "command": "true"}], specs=[spec])
    result = await settle(serving, store, graph)
    assert result["status"] == "failed"
    (node_run,) = graphs.graph_get(store, graph)["node_runs"]
    assert (node_run["status"], node_run["error"]) == (
        "failed",
        f"Refused: no room for node run {node_run['id']}",
    )


async def test_an_absurd_stored_timeout_cannot_wedge_the_run(
    serving: Client, store: Store, repo: Path
) -> None:
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, repo, [{"name": "check", "command": "true"}], specs=[spec])
    with store.transaction() as rows:  # stored before timeouts were validated
        stored = graph_record(rows, graph)
        update(rows, "graphs", graph, nodes=[{**stored["nodes"][0], "timeout_minutes": 1e308}])
    result = await settle(serving, store, graph)
    assert result["status"] == "completed", result
    with store.transaction() as rows:
        step = load_step(graph_record(rows, graph), "check")
    assert step is not None
    assert step.timeout_minutes == step.definition.timeout_minutes == MAX_NODE_TIMEOUT_MINUTES
