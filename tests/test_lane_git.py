"""A lane's git mechanics on real repositories: made from the target's tip, integrated in
order (rebase and fast-forward, or a merge commit), a conflict reported and undone, a
dirty target left alone, every step safe to repeat, and removal that keeps a branch
holding work and never touches a worktree Canopy did not make."""

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import TypeVar, cast

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from canopy.activities.lanes import close_lane_worktree, integrate_lane_branch, open_lane_worktree
from canopy.contracts.lanes import LaneIntegration, LaneRef
from canopy.errors import Refused
from canopy.lanes import (
    Closed,
    Integration,
    Lane,
    branch_name,
    close_lane,
    found_lanes,
    integrate_lane,
    lane_directory,
    open_lane,
    target_branch,
)
from canopy.ops import graphs, runs, worktrees
from canopy.store.engine import Store
from tests.cli_helpers import run_canopy
from tests.conftest import make_specs
from tests.engine import git, make_queue

T = TypeVar("T")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "home"
    monkeypatch.setenv("CANOPY_HOME", str(data))
    return data


def lane(repo: Path, number: int, spec: str = "spec-abc", name: str = "Login page") -> Lane:
    lane_id = f"run-x1-{number}"
    return Lane(
        graph_id="graph-g1",
        run_id="run-x1",
        spec_id=spec,
        lane_id=lane_id,
        branch=branch_name("Build it", name, spec, lane_id),
        workdir=str(repo),
        target="main",
    )


def commit(tree: Path, path: str, text: str, message: str | None = None) -> None:
    (tree / path).write_text(text)
    git(tree, "add", path)
    git(tree, "commit", "-q", "-m", message or f"write {path}")


def log(repo: Path, ref: str = "main") -> list[str]:
    return git(repo, "log", "--format=%s", ref).split("\n")[:-1]


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


def test_a_lane_is_a_worktree_on_its_own_branch_from_the_target_tip(repo: Path) -> None:
    made = open_lane(lane(repo, 1))
    assert made.branch == "canopy/build-it/login-page-spec-abc/run-x1-1"
    assert made.tree == lane_directory("graph-g1", "run-x1-1") / "tree"
    assert made.base == git(repo, "rev-parse", "main").strip()
    assert (made.tree / "README.md").read_text() == "demo\n"
    assert git(made.tree, "symbolic-ref", "--short", "HEAD").strip() == made.branch
    recorded = json.loads((made.directory / "lane.json").read_text())
    assert recorded["spec_id"] == "spec-abc" and recorded["workdir"] == str(repo)
    assert git(repo, "status", "--porcelain") == ""  # nothing of it in the target's tree
    assert open_lane(lane(repo, 1)) == made  # again: the same lane, untouched


def test_a_half_made_lane_is_made_again(repo: Path) -> None:
    wanted = lane(repo, 1)
    wanted.tree.mkdir(parents=True)
    (wanted.tree / "junk").write_text("left by a crash")
    made = open_lane(wanted)
    assert not (made.tree / "junk").exists()
    assert (made.tree / "README.md").exists()


def test_ids_and_names_cannot_choose_a_path_or_break_a_branch() -> None:
    with pytest.raises(Refused, match="not an id"):
        lane_directory("graph-g1", "../../etc")
    with pytest.raises(Refused, match="not an id"):
        branch_name("g", "s", "spec-1", "run-1/../x")
    assert branch_name("Ünïcode ~^:?*[ graph", "..lock", "spec-1", "run-1-2") == (
        "canopy/n-code-graph/lock-spec-1/run-1-2"
    )
    assert branch_name("!!!", "", "spec-1", "run-1-2") == "canopy/graph/spec-spec-1/run-1-2"


def test_lanes_integrate_in_order_as_a_straight_line(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def", "Logout"))
    commit(second.tree, "logout.txt", "bye\n", "logout")  # the later one finishes first
    commit(first.tree, "login.txt", "hi\n", "login")
    one = integrate_lane(first)
    assert one.outcome == "integrated" and not one.already
    two = integrate_lane(second)
    assert two.outcome == "integrated"
    assert log(repo) == ["logout", "login", "initial"]
    assert git(repo, "rev-list", "--merges", "main") == ""
    # the target's checkout followed, as a fast-forward would move it
    assert (repo / "login.txt").read_text() == "hi\n" and (repo / "logout.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert integrate_lane(second) == type(two)("integrated", commit=two.commit, already=True)


def test_a_merge_commit_keeps_the_target_as_first_parent(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    commit(first.tree, "a.txt", "a\n", "a")
    commit(second.tree, "b.txt", "b\n", "b")
    assert integrate_lane(first, "merge").outcome == "integrated"
    merged = integrate_lane(second, "merge")
    assert merged.outcome == "integrated"
    assert git(repo, "log", "--first-parent", "--format=%s", "main").split("\n")[:2] == [
        f"Merge {second.branch}",
        f"Merge {first.branch}",
    ]
    assert integrate_lane(second, "merge").already


def test_a_lane_without_commits_integrates_as_nothing(repo: Path) -> None:
    tip = git(repo, "rev-parse", "main").strip()
    done = integrate_lane(open_lane(lane(repo, 1)))
    assert (done.outcome, done.commit, done.already) == ("integrated", tip, True)


def test_a_target_not_checked_out_moves_by_its_ref_alone(repo: Path) -> None:
    made = open_lane(lane(repo, 1))
    git(repo, "checkout", "-q", "-b", "elsewhere")
    commit(made.tree, "a.txt", "a\n", "a")
    assert integrate_lane(made).outcome == "integrated"
    assert log(repo, "main")[0] == "a"
    assert not (repo / "a.txt").exists()  # the checkout on another branch is not touched


def test_a_conflict_is_undone_and_names_its_paths(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    commit(first.tree, "README.md", "first\n")
    commit(second.tree, "README.md", "second\n")
    commit(second.tree, "other.txt", "fine\n")
    assert integrate_lane(first).outcome == "integrated"
    before = git(repo, "rev-parse", "main")
    clash = integrate_lane(second)
    assert (clash.outcome, clash.paths, clash.count) == ("conflict", ("README.md",), 1)
    assert clash.where == str(second.tree)
    assert git(repo, "rev-parse", "main") == before
    # the lane is as the spec left it: on its branch, no rebase in progress, clean
    assert git(second.tree, "symbolic-ref", "--short", "HEAD").strip() == second.branch
    assert git(second.tree, "status", "--porcelain") == ""
    assert (second.tree / "README.md").read_text() == "second\n"
    assert integrate_lane(second).outcome == "conflict"  # again: the same answer
    # resolved by hand in the lane, it integrates
    git(second.tree, "reset", "-q", "--hard", "main")
    commit(second.tree, "README.md", "first, then second\n")
    assert integrate_lane(second).outcome == "integrated"
    assert (repo / "README.md").read_text() == "first, then second\n"


def test_a_conflict_counts_every_path_and_shows_twenty(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    for tree, text in ((first.tree, "one"), (second.tree, "two")):
        for index in range(25):
            (tree / f"f{index:02}.txt").write_text(text)
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", text)
    integrate_lane(first)
    clash = integrate_lane(second)
    assert clash.count == 25 and len(clash.paths) == 20 and clash.paths[0] == "f00.txt"


def test_a_dirty_target_is_never_reset(repo: Path) -> None:
    made = open_lane(lane(repo, 1))
    commit(made.tree, "README.md", "lane\n")
    (repo / "README.md").write_text("someone's edit\n")
    stopped = integrate_lane(made)
    assert (stopped.outcome, stopped.where, stopped.paths) == ("dirty", str(repo), ("README.md",))
    assert (repo / "README.md").read_text() == "someone's edit\n"
    assert log(repo) == ["initial"]
    git(repo, "checkout", "--", "README.md")
    assert integrate_lane(made).outcome == "integrated"


def test_uncommitted_work_in_the_lane_is_not_integrated(repo: Path) -> None:
    made = open_lane(lane(repo, 1))
    commit(made.tree, "a.txt", "a\n")
    (made.tree / "half.txt").write_text("not committed")
    stopped = integrate_lane(made)
    assert (stopped.outcome, stopped.where) == ("dirty", str(made.tree))


def test_a_rebase_cut_short_by_a_crash_is_started_over(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    commit(first.tree, "README.md", "first\n")
    commit(second.tree, "README.md", "second\n")
    integrate_lane(first)
    # a crash inside the integration's rebase leaves it in progress, conflicted
    (second.directory / "integrating").touch()
    with pytest.raises(subprocess.CalledProcessError):
        git(second.tree, "rebase", "main")
    assert integrate_lane(second).outcome == "conflict"
    assert git(second.tree, "symbolic-ref", "--short", "HEAD").strip() == second.branch
    assert not (second.directory / "integrating").exists()


def test_a_rebase_a_person_started_in_the_lane_is_left_alone(repo: Path) -> None:
    first, second = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    commit(first.tree, "README.md", "first\n")
    commit(second.tree, "README.md", "second\n")
    integrate_lane(first)
    with pytest.raises(subprocess.CalledProcessError):
        git(second.tree, "rebase", "main")  # resolving by hand, not finished
    stopped = integrate_lane(second)
    assert (stopped.outcome, stopped.where) == ("dirty", str(second.tree))
    assert "<<<<<<<" in (second.tree / "README.md").read_text()


def test_closing_removes_the_lane_and_its_integrated_branch(repo: Path) -> None:
    made = open_lane(lane(repo, 1))
    commit(made.tree, "a.txt", "a\n")
    integrate_lane(made)
    assert close_lane(made).kept_branch is None
    assert not made.directory.exists() and made.branch not in branches(repo)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert close_lane(made).kept_branch is None  # again: nothing left to do


def test_closing_keeps_a_branch_that_holds_work(repo: Path) -> None:
    worked, idle = open_lane(lane(repo, 1)), open_lane(lane(repo, 2, "spec-def"))
    commit(worked.tree, "a.txt", "a\n")
    assert close_lane(worked).kept_branch == worked.branch
    assert close_lane(idle).kept_branch is None
    assert sorted(branches(repo)) == [worked.branch, "main"]
    assert not worked.directory.exists() and not worked.directory.parent.exists()


def test_only_lanes_canopy_made_are_found(repo: Path, home: Path, tmp_path: Path) -> None:
    ours = open_lane(lane(repo, 1))
    git(repo, "worktree", "add", "-q", "-b", "mine", str(tmp_path / "mine"))
    foreign = home / "worktrees" / "graph-g1" / "run-x1-9"
    foreign.mkdir()
    (foreign / "lane.json").write_text(json.dumps({**ours.__dict__, "branch": "mine"}))
    moved = home / "worktrees" / "graph-g1" / "run-x1-8"
    moved.mkdir()
    (moved / "lane.json").write_text(json.dumps(ours.__dict__))  # names another directory
    (home / "worktrees" / "graph-g1" / "stray").mkdir()
    assert found_lanes() == [ours]


def test_a_detached_head_has_no_target(repo: Path) -> None:
    assert target_branch(str(repo)) == "main"
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(Refused, match="detached HEAD"):
        target_branch(str(repo))


def test_the_activities_carry_lanes_and_answers_through_the_converter(repo: Path) -> None:
    converter = pydantic_data_converter.payload_converter

    def through(value: object, kind: type[T]) -> T:
        (payload,) = converter.to_payloads([value])
        (decoded,) = converter.from_payloads([payload], [kind])
        return cast(T, decoded)

    request = through(LaneRef.of(lane(repo, 1)), LaneRef)
    made = through(open_lane_worktree(request), LaneRef)
    assert made.base and made.lane().tree.is_dir()
    commit(made.lane().tree, "a.txt", "a\n")
    integration = LaneIntegration(lane=made, mode="merge")
    done = through(integrate_lane_branch(through(integration, LaneIntegration)), Integration)
    assert (done.outcome, done.already) == ("integrated", False)
    assert through(close_lane_worktree(made), Closed) == Closed(kept_branch=None)


def test_prune_removes_lanes_of_runs_that_are_over_and_nothing_else(
    store: Store, repo: Path, tmp_path: Path
) -> None:
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(repo), "nodes": [{"name": "n", "command": "true"}]}
    )
    queue = make_queue(store, make_specs(store, "s"))
    active = runs.prepare_run(store, graph["id"], queue=queue).start.run_id
    alive = open_lane(replace(lane(repo, 1), run_id=active, lane_id=f"{active}-1"))
    crashed, idle = open_lane(lane(repo, 2)), open_lane(lane(repo, 3, "spec-idle"))
    commit(crashed.tree, "a.txt", "a\n")
    git(repo, "worktree", "add", "-q", "-b", "mine", str(tmp_path / "mine"))
    listed = worktrees.worktree_list(store)
    assert [(row["worktree"], row["run_status"], row["leftover"]) for row in listed] == [
        (str(alive.tree), "running", False),
        (str(crashed.tree), None, True),
        (str(idle.tree), None, True),
    ]
    assert worktrees.worktree_prune(store) == {
        "removed": [str(crashed.tree), str(idle.tree)],
        "kept_branches": [crashed.branch],
    }
    assert found_lanes() == [alive]
    assert (tmp_path / "mine").is_dir() and "mine" in branches(repo)


def test_the_worktree_commands_list_and_prune_from_the_cli(repo: Path, home: Path) -> None:
    made = open_lane(lane(repo, 1))
    commit(made.tree, "a.txt", "a\n")
    listed = run_canopy(home, "worktree", "list", "--json")
    assert listed.code == 0, listed.stderr
    assert [(row["branch"], row["run_status"]) for row in json.loads(listed.stdout)] == [
        (made.branch, None)
    ]
    table = run_canopy(home, "worktree", "list")
    assert made.branch in table.stdout and "(gone)" in table.stdout
    pruned = run_canopy(home, "worktree", "prune")
    assert pruned.code == 0, pruned.stderr
    assert pruned.stdout.splitlines() == [
        "removed 1 lane worktree(s)",
        f"kept branch {made.branch}: it holds commits its target does not have",
    ]
    assert json.loads(run_canopy(home, "worktree", "list", "--json").stdout) == []
