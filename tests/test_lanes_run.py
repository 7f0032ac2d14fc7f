"""Runs of lanes on the real dev server: several specs at once, each in its own worktree,
integrated into the target in queue order, nothing left behind; a conflict that pauses
the run, and each of its ways out."""

import re
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from canopy.contracts.graph_run import RunStatus
from canopy.ops import control, graphs, queues, runs
from canopy.store.engine import Store
from tests import engine
from tests.conftest import make_specs
from tests.engine import agent_runs, eventually, fake_node, git, make_graph, make_queue, settle

pytestmark = pytest.mark.server

store = engine.home_store

COMMIT = (
    'printf "%s\\n" "$CANOPY_SPEC_NAME" > "done-$CANOPY_SPEC_ID.txt"'
    ' && git add -A && git commit -q -m "$CANOPY_SPEC_NAME"'
)
"""A node that commits a file of its own, named for its spec, with the spec's name."""


def barrier(directory: Path, count: int) -> str:
    """A node that waits (up to a minute) until ``count`` nodes have reached it: it only
    gets past when that many run at once."""
    return (
        f'touch "{directory}/$CANOPY_SPEC_ID"; i=0; while [ "$(ls "{directory}" | wc -l)" -lt '
        f"{count} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
        f'[ "$(ls "{directory}" | wc -l)" -ge {count} ]'
    )


def log(repo: Path) -> list[str]:
    """The target's commit subjects, oldest first."""
    return git(repo, "log", "--reverse", "--format=%s", "main").splitlines()


def leftovers(repo: Path, home: Path) -> tuple[list[str], list[str], list[Path]]:
    """Worktrees, branches and lane directories still there."""
    worktrees = [
        line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]  # fmt: skip
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    lanes = sorted((home / "worktrees").glob("*/*")) if (home / "worktrees").exists() else []
    return worktrees, branches, lanes


async def test_four_lanes_integrate_eight_specs_in_queue_order(
    serving: Client, store: Store, repo: Path, canopy_home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    names = [f"spec {index}" for index in range(1, 9)]
    spec_ids = make_specs(store, *names)
    make_queue(store, spec_ids, "eight")
    nodes = [{"name": "wait", "command": barrier(gate, 4)}, {"name": "commit", "command": COMMIT}]
    graph = make_graph(store, repo, nodes, "wide", lanes=4)
    result = await settle(serving, store, graph, queue="eight")
    assert result["status"] == "completed", result
    assert log(repo) == ["initial", *names]
    assert sorted(path.name for path in repo.glob("done-*.txt")) == sorted(
        f"done-{spec_id}.txt" for spec_id in spec_ids
    )
    assert git(repo, "status", "--porcelain") == ""
    assert leftovers(repo, canopy_home) == ([f"worktree {repo}"], ["main"], [])
    info = graphs.graph_get(store, graph)
    members = info["queue_progress"]["members"]
    assert sorted((m["spec_id"], m["outcome"]) for m in members) == sorted(
        (spec_id, "completed") for spec_id in spec_ids
    )


async def test_a_graph_of_merge_integration_lands_each_spec_as_a_merge_commit(
    serving: Client, store: Store, repo: Path, canopy_home: Path
) -> None:
    names = ["one", "two", "three"]
    make_queue(store, make_specs(store, *names), "merged")
    graph = make_graph(
        store, repo, [{"name": "commit", "command": COMMIT}], "merged", lanes=2,
        integration="merge",
    )  # fmt: skip
    result = await settle(serving, store, graph, queue="merged")
    assert result["status"] == "completed", result
    first_parents = git(repo, "log", "--first-parent", "--reverse", "--format=%s", "main")
    landed = [re.fullmatch(r"Merge canopy/merged/(\w+)-spec-\w+/run-[\w-]+", subject)
              for subject in first_parents.splitlines()[1:]]  # fmt: skip
    assert [match.group(1) if match else None for match in landed] == names, first_parents
    commits = git(repo, "log", "--no-merges", "--format=%s", "main").splitlines()
    assert sorted(commits) == sorted([*names, "initial"])
    assert leftovers(repo, canopy_home) == ([f"worktree {repo}"], ["main"], [])


async def test_a_node_works_in_its_lane_and_hooks_in_the_workdir(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    spec_ids = make_specs(store, "one", "two")
    make_queue(store, spec_ids, "two")
    node = {"name": "where", "command": f'echo "node $CANOPY_WORKDIR" >> "{seen}"'}
    hook = {"command": f'echo "spec {{{{spec_id}}}} {{{{workdir}}}}" >> "{seen}"'}
    graph = make_graph(store, repo, [node], "where", lanes=2, hooks={"on_spec_completed": [hook]})
    result = await settle(serving, store, graph, queue="two")
    assert result["status"] == "completed", result
    lines = seen.read_text().splitlines()
    node_dirs = [line.removeprefix("node ") for line in lines if line.startswith("node ")]
    assert len(node_dirs) == 2 and all(path.endswith("/tree") for path in node_dirs)
    assert all(str(repo) not in path for path in node_dirs)
    assert sorted(line for line in lines if line.startswith("spec ")) == sorted(
        f"spec {spec_id} {repo}" for spec_id in spec_ids
    )


EDIT_README = (
    'printf "%s\\n" "$CANOPY_SPEC_NAME" > README.md && git commit -q -am "$CANOPY_SPEC_NAME"'
)


async def conflicted(
    serving: Client, store: Store, repo: Path, tmp_path: Path, name: str
) -> tuple[str, list[str], dict[str, object]]:
    """A run of two lanes whose two specs change README.md's one line: the first lands,
    the second pauses the run on a merge conflict. The graph, the specs, the blocker."""
    gate = tmp_path / "gate"
    gate.mkdir()
    spec_ids = make_specs(store, "first", "second")
    make_queue(store, spec_ids, name)
    nodes = [
        {"name": "wait", "command": barrier(gate, 2)},
        {"name": "edit", "command": EDIT_README},
    ]
    graph = make_graph(store, repo, nodes, name, lanes=2)
    await runs.graph_run(store, graph, queue=name)

    def paused() -> dict[str, object] | None:
        info = graphs.graph_get(store, graph)
        return info["blocker"] if info["status"] == "paused" else None

    blocker = await eventually(paused, "the merge conflict")
    return graph, spec_ids, blocker


async def test_a_conflict_pauses_the_run_naming_spec_branch_and_path(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    graph, (_, second), blocker = await conflicted(serving, store, repo, tmp_path, "clash")
    assert blocker["kind"] == "merge_conflict"
    assert blocker["next_spec"] == {"id": second, "name": "second"}
    assert blocker["conflict_paths"] == ["README.md"]
    branch = str(blocker["branch"])
    assert branch.startswith("canopy/clash/second-")
    assert log(repo) == ["initial", "first"]
    assert (repo / "README.md").read_text() == "first\n"
    # skip it: the run completes, the branch holding its work is kept and named
    await control.graph_continue(store, graph, "skip_next_spec")
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert log(repo) == ["initial", "first"]
    worktrees, branches, lanes = leftovers(repo, canopy_home)
    assert (worktrees, sorted(branches), lanes) == ([f"worktree {repo}"], [branch, "main"], [])
    kept = graphs.graph_get(store, graph)["kept_branches"]
    assert kept == [{"spec_id": second, "branch": branch}]


async def test_a_conflict_rerun_on_the_new_tip_lands(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    graph, _, blocker = await conflicted(serving, store, repo, tmp_path, "rerun")
    await control.graph_continue(store, graph, "run_from_node", "edit")
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert log(repo) == ["initial", "first", "second"]
    assert (repo / "README.md").read_text() == "second\n"
    _, branches, lanes = leftovers(repo, canopy_home)
    assert lanes == [] and sorted(branches) == sorted([str(blocker["branch"]), "main"])


async def test_a_conflict_resolved_by_hand_lands(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    graph, _, blocker = await conflicted(serving, store, repo, tmp_path, "byhand")
    worktree = Path(str(blocker["worktree"]))
    git(worktree, "reset", "-q", "--hard", "main")
    (worktree / "README.md").write_text("first and second\n")
    git(worktree, "commit", "-q", "-am", "second, resolved")
    await control.graph_continue(store, graph, "recheck")
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert log(repo) == ["initial", "first", "second, resolved"]
    assert leftovers(repo, canopy_home) == ([f"worktree {repo}"], ["main"], [])


async def test_lanes_in_flight_show_in_graph_info_the_status_query_and_the_details(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    hold = f'i=0; while [ ! -f "{go}" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'
    spec_ids = make_specs(store, "left", "right", "later")
    make_queue(store, spec_ids, "shown")
    graph = make_graph(store, repo, [{"name": "hold", "command": hold}], "shown", lanes=2)
    started = await runs.graph_run(store, graph, queue="shown")

    def two_busy() -> list[dict[str, object]] | None:
        lanes = graphs.graph_get(store, graph)["lanes_in_flight"]
        return lanes if len(lanes) == 2 and all(lane["node"] for lane in lanes) else None

    lanes = await eventually(two_busy, "two lanes at node hold")
    assert sorted(str(lane["spec_id"]) for lane in lanes) == sorted(spec_ids[:2])
    assert all(str(lane["worktree"]).endswith("/tree") for lane in lanes)
    assert all(str(lane["branch"]).startswith("canopy/shown/") for lane in lanes)
    handle = serving.get_workflow_handle(started["workflow_id"])
    status = await handle.query("status", result_type=RunStatus)
    assert sorted(lane.spec_id for lane in status.lanes) == sorted(spec_ids[:2])
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "2 of 2 lanes busy" in metadata.current_details
    go.touch()
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert graphs.graph_get(store, graph)["lanes_in_flight"] == []


async def test_a_budget_reached_in_a_lane_parks_the_run_until_raised(
    serving: Client, store: Store, repo: Path, canopy_home: Path
) -> None:
    names = ["a", "b", "c", "d"]
    make_queue(store, make_specs(store, *names), "costly")
    work = (
        "FAKE: usage 1000 200 0 0.6\nFAKE: write out/{{spec_id}}.txt done\n"
        "FAKE: commit {{spec_name}}"
    )
    node = fake_node("implement", work)
    graph = make_graph(store, repo, [node], "costly", lanes=2, budget={"run": {"usd": 1.0}})
    await runs.graph_run(store, graph, queue="costly")
    paused = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "budget"), paused
    landed = len(log(repo)) - 1
    assert 2 <= landed < len(names), "no node launched once the budget was reached"
    graphs.graph_edit(store, graph, {"budget": {"run": {"usd": 100}}})
    await control.graph_continue(store, graph)
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert sorted(log(repo)[1:]) == names
    assert leftovers(repo, canopy_home) == ([f"worktree {repo}"], ["main"], [])


def held_graph(store: Store, repo: Path, tmp_path: Path, name: str) -> tuple[str, Path]:
    """Three queued specs and a graph of two lanes whose node commits, then holds until
    ``go`` exists; (graph id, go)."""
    go = tmp_path / "go"
    hold = f'i=0; while [ ! -f "{go}" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'
    make_queue(store, make_specs(store, "one", "two", "three"), name)
    nodes = [{"name": "commit", "command": COMMIT}, {"name": "hold", "command": hold}]
    return make_graph(store, repo, nodes, name, lanes=2), go


async def two_holding(store: Store, graph: str) -> None:
    def holding() -> bool:
        lanes = graphs.graph_get(store, graph)["lanes_in_flight"]
        return len(lanes) == 2 and all(lane["node"] == "hold" for lane in lanes)

    await eventually(holding, "two lanes at node hold")


async def test_a_stop_pauses_every_lane_and_a_continue_runs_them_afresh(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    graph, go = held_graph(store, repo, tmp_path, "stopped")
    await runs.graph_run(store, graph, queue="stopped")
    await two_holding(store, graph)
    await control.graph_stop(store, graph)
    paused = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "stopped"), paused
    _, branches, lanes = leftovers(repo, canopy_home)
    assert lanes == [] and len(branches) == 3, "lanes removed, branches with commits kept"
    assert log(repo) == ["initial"]
    go.touch()
    await control.graph_continue(store, graph)
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert sorted(log(repo)[1:]) == ["one", "three", "two"]


async def test_a_reset_removes_every_lane_of_the_run(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    graph, _ = held_graph(store, repo, tmp_path, "reset")
    started = await runs.graph_run(store, graph, queue="reset")
    await two_holding(store, graph)
    await control.graph_reset(store, graph)
    await serving.get_workflow_handle(started["workflow_id"]).result()
    assert graphs.graph_get(store, graph)["status"] == "idle"
    _, branches, lanes = leftovers(repo, canopy_home)
    assert lanes == [] and len(branches) == 3, "lanes removed, branches with commits kept"
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_a_conflict_resolver_node_lands_a_conflicting_spec_without_a_pause(
    serving: Client, store: Store, repo: Path, tmp_path: Path, canopy_home: Path
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    first, second = make_specs(store, "first", "second")
    make_queue(store, [first, second], "resolved")
    resolve = {
        "name": "resolve",
        "command": 'git rebase -q main || { printf "both\\n" > README.md && git add README.md'
        " && GIT_EDITOR=true git rebase --continue; }",
    }
    nodes = [
        {"name": "wait", "command": barrier(gate, 2)},
        {"name": "edit", "command": EDIT_README},
        resolve,
    ]
    graph = make_graph(
        store, repo, nodes, "resolved", lanes=2, conflict_resolver="resolve"
    )  # fmt: skip
    result = await settle(serving, store, graph, queue="resolved")
    assert result["status"] == "completed", result
    assert log(repo) == ["initial", "first", "second"]
    assert (repo / "README.md").read_text() == "both\n"
    runs_of = [(n["spec_id"], n["node"]) for n in graphs.graph_get(store, graph)["node_runs"]]
    assert sorted(runs_of) == sorted(
        [(first, "wait"), (first, "edit"), (second, "wait"), (second, "edit"), (second, "resolve")]
    ), "the resolver runs only when sent to"
    assert leftovers(repo, canopy_home) == ([f"worktree {repo}"], ["main"], [])


async def test_a_context_group_is_one_lane_its_members_in_order_at_one_path(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    g1, g2, u1 = make_specs(store, "g1", "g2", "u1")
    queue = queues.queue_create(store, "grouped")["id"]
    queues.queue_add_spec(store, queue, g1, group="auth")
    queues.queue_add_spec(store, queue, g2, group="auth")
    queues.queue_add_spec(store, queue, u1)
    record = (
        f'echo "$CANOPY_SPEC_NAME $CANOPY_WORKDIR $(git log --format=%s | paste -sd,)" >> "{seen}"'
    )
    nodes = [{"name": "look", "command": record}, {"name": "commit", "command": COMMIT}]
    graph = make_graph(store, repo, nodes, "grouped", lanes=3)
    result = await settle(serving, store, graph, queue="grouped")
    assert result["status"] == "completed", result
    lines = {line.split()[0]: line.split()[1:] for line in seen.read_text().splitlines()}
    assert lines["g1"][0] == lines["g2"][0] != lines["u1"][0], "the group shares one lane path"
    assert "g1" in lines["g2"][1].split(","), "g2 started from the target once g1 was in it"
    assert "g2" not in lines["g1"][1].split(",")
    assert log(repo).index("g1") < log(repo).index("g2")


async def test_a_groups_specs_share_their_warm_agent_session_in_their_lane(
    serving: Client, store: Store, repo: Path, record: Path
) -> None:
    """The reference's warm session holds in a run of lanes: each later member of a
    context group resumes the session its sibling left, at the lane's one path, while an
    ungrouped spec in another lane starts its own."""
    g1, g2, loner = make_specs(store, "g1", "g2", "loner")
    queue = queues.queue_create(store, "warm")["id"]
    queues.queue_add_spec(store, queue, g1, group="auth")
    queues.queue_add_spec(store, queue, g2, group="auth")
    queues.queue_add_spec(store, queue, loner)
    implement = fake_node(
        "implement", "FAKE: write out/{{spec_id}}.txt x\nFAKE: commit {{spec_id}}"
    )
    graph = make_graph(store, repo, [implement], "warm", lanes=2)
    result = await settle(serving, store, graph, queue="warm")
    assert result["status"] == "completed", result
    by_spec = {r["prompt"].splitlines()[0]: r for r in agent_runs(record)}
    assert by_spec["g1"]["resumed"] is None
    assert by_spec["g2"]["resumed"] == by_spec["g1"]["session_id"]
    assert by_spec["loner"]["resumed"] is None
    landed = log(repo)[1:]  # the fake agent's commits carry the spec's id
    assert sorted(landed) == sorted([g1, g2, loner])
    assert landed.index(g1) < landed.index(g2)


async def test_a_pause_lets_the_lanes_finish_then_parks_until_continue(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    graph, go = held_graph(store, repo, tmp_path, "paused")
    await runs.graph_run(store, graph, queue="paused")
    await two_holding(store, graph)
    await control.graph_pause(store, graph, wait=0)
    go.touch()
    paused = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert (paused["status"], paused["blocker"]["kind"]) == ("paused", "paused"), paused
    assert len(log(repo)) == 3, "the two specs in flight landed; the third did not start"
    await control.graph_continue(store, graph)
    settled = await runs.wait_until_settled(store, graph, engine.SETTLE_TIMEOUT)
    assert settled["status"] == "completed", settled
    assert sorted(log(repo)[1:]) == ["one", "three", "two"]
