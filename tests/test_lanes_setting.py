"""A graph's ``lanes``: written in JSON or TOML, edited, shown, checked at every door with
one line; a run takes the graph's or its own, and a run of lanes the branch it integrates
into."""

from pathlib import Path

import pytest

from canopy.activities.bookkeeping import load_step
from canopy.errors import Refused
from canopy.graphs.parse import parse_definition
from canopy.ops import graphs, runs
from canopy.ops.graph_info import stored_graph_info
from canopy.store.engine import Store
from canopy.store.queries import graph_record
from tests.conftest import make_specs, snapshot
from tests.engine import git, make_graph, make_queue

NODES = [{"name": "work", "command": "true"}]


def test_a_graph_has_one_lane_unless_it_says_otherwise(store: Store, repo: Path) -> None:
    plain = make_graph(store, repo, NODES, "plain")
    assert stored_graph_info(store, plain).lanes == 1
    toml = (
        'name = "wide"\nworkdir = "/src/app"\nlanes = 4\n[[nodes]]\nname = "w"\ncommand = "true"\n'
    )
    wide = graphs.graph_create(store, parse_definition(toml, "wide.toml"))
    assert wide["lanes"] == 4
    edited = graphs.graph_edit(store, "wide", {"lanes": 16})
    assert (edited["lanes"], edited["integration"]) == (16, "rebase")
    assert graphs.graph_edit(store, "wide", {"workdir": str(repo)})["lanes"] == 16  # kept
    assert graphs.graph_edit(store, "wide", {"integration": "merge"})["integration"] == "merge"
    assert stored_graph_info(store, "wide").integration == "merge"


@pytest.mark.parametrize(
    ("lanes", "problem"),
    [
        (0, "lanes: 0 is out of range; it must be between 1 and 16"),
        (17, "lanes: 17 is out of range; it must be between 1 and 16"),
        ("2", "lanes: Input should be a valid integer"),
        (True, "lanes: Input should be a valid integer"),
        (2.0, "lanes: Input should be a valid integer"),
    ],
)
def test_lanes_outside_one_to_sixteen_are_refused_in_one_line(
    store: Store, repo: Path, lanes: object, problem: str
) -> None:
    make_graph(store, repo, NODES, "narrow")
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        graphs.graph_edit(store, "narrow", {"lanes": lanes})
    assert refused.value.message == f"graph definition refused: {problem}"
    assert snapshot(store) == before


def test_an_integration_other_than_rebase_or_merge_is_refused(store: Store, repo: Path) -> None:
    make_graph(store, repo, NODES, "narrow")
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        graphs.graph_edit(store, "narrow", {"integration": "squash"})
    assert refused.value.message == (
        "graph definition refused: integration: Input should be 'rebase' or 'merge'"
    )
    assert snapshot(store) == before


def test_a_conflict_resolver_must_name_a_node_and_runs_only_when_sent_to(
    store: Store, repo: Path
) -> None:
    nodes = [{"name": "work", "command": "true"}, {"name": "fix", "command": "true"}]
    make_graph(store, repo, nodes, "wide", lanes=2)
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        graphs.graph_edit(store, "wide", {"conflict_resolver": "nope"})
    assert refused.value.message == (
        "graph definition refused: conflict_resolver names unknown node 'nope'; nodes: work, fix"
    )
    assert snapshot(store) == before
    edited = graphs.graph_edit(store, "wide", {"conflict_resolver": "fix"})
    assert edited["conflict_resolver"] == "fix"
    with store.transaction() as rows:
        graph = graph_record(rows, edited["id"])
    step = load_step(graph, "work")
    assert step is not None and step.next_node is None, "work completes the spec"


def test_a_run_takes_the_graph_s_lanes_or_its_own(store: Store, repo: Path) -> None:
    queue = make_queue(store, make_specs(store, "one"))
    make_graph(store, repo, NODES, "wide", lanes=4)
    prepared = runs.prepare_run(store, "wide", queue=queue)
    start = prepared.start
    assert (start.lanes, start.lanes_fixed, start.target) == (4, False, "main")
    runs.forget_run(store, prepared)
    start = runs.prepare_run(store, "wide", queue=queue, lanes=1).start
    assert (start.lanes, start.lanes_fixed, start.target) == (1, True, None)


def test_a_run_of_lanes_needs_a_branch_checked_out(store: Store, repo: Path) -> None:
    make_graph(store, repo, NODES, "wide", lanes=4)
    graph = make_graph(store, repo, NODES, "narrow")
    git(repo, "checkout", "-q", "--detach")
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        runs.prepare_run(store, "wide")
    assert refused.value.message == (
        f"workdir {repo} has no branch checked out (detached HEAD); lanes integrate into a "
        "branch: check one out"
    )
    with pytest.raises(Refused, match="detached HEAD"):
        runs.prepare_run(store, graph, lanes=2)
    with pytest.raises(Refused, match=r"^lanes: 0 is out of range; it must be between 1 and 16$"):
        runs.prepare_run(store, graph, lanes=0)
    assert snapshot(store) == before
