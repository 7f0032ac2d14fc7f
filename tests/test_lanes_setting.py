"""A graph's ``lanes``: written in JSON or TOML, edited, shown, checked at every door with
one line, and (until the engine runs lanes) a run of more than one refused before
anything is written."""

from pathlib import Path

import pytest

from canopy.errors import Refused
from canopy.graphs.parse import parse_definition
from canopy.ops import graphs, runs
from canopy.ops.graph_info import stored_graph_info
from canopy.store.engine import Store
from tests.conftest import make_specs, snapshot
from tests.engine import make_graph, make_queue

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
    assert edited["lanes"] == 16
    assert graphs.graph_edit(store, "wide", {"workdir": str(repo)})["lanes"] == 16  # kept


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


def test_a_run_of_more_than_one_lane_is_refused_for_now(store: Store, repo: Path) -> None:
    make_graph(store, repo, NODES, "wide", lanes=4, specs=[])
    graph = make_graph(store, repo, NODES, "narrow")
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        runs.prepare_run(store, "wide")
    assert refused.value.message == (
        "graph wide: runs of more than one lane are not supported yet (this run would have "
        "4); run it with --lanes 1 or set the graph's lanes to 1"
    )
    with pytest.raises(Refused, match=r"\(this run would have 2\)"):
        runs.prepare_run(store, graph, lanes=2)
    with pytest.raises(Refused, match=r"^lanes: 0 is out of range; it must be between 1 and 16$"):
        runs.prepare_run(store, graph, lanes=0)
    assert snapshot(store) == before
    queue = make_queue(store, make_specs(store, "one"))
    assert runs.prepare_run(store, "wide", queue=queue, lanes=1).start.graph_name == "wide"
