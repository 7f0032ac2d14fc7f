"""A run of four lanes survives a SIGKILLed worker and a SIGKILLed dev server: every
spec's node runs once, every spec is integrated once and in queue order,
``on_spec_completed`` fires once per spec, and no lane is left behind.

The daemons run as users run them (``canopy server start``, ``python worker.py``) and are
killed while all four lanes have a node running.
"""

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from canopy.ops import graphs, queues, runs, specs
from canopy.store.engine import open_store
from tests.conftest import body
from tests.daemons import TIMEOUT, Daemons
from tests.engine import eventually, file_lines, git
from tests.test_crash import HEARTBEAT_TIMEOUT, daemons

__all__ = ["daemons"]  # the fixture, shared with the other crash tests

pytestmark = pytest.mark.server
SPECS = 8


def lanes_graph(repo: Path, effects: Path, hooks: Path) -> tuple[str, list[str], list[str]]:
    """Eight queued specs and a graph of four lanes whose one node records its start,
    works a while, commits a file of its own and records its end; ``on_spec_completed``
    records each spec. (graph id, spec names, spec ids)."""
    store = open_store()
    names = [f"spec {index}" for index in range(1, SPECS + 1)]
    ids = [specs.spec_create(store, name, body(f"{name} summary"))["id"] for name in names]
    queue = queues.queue_create(store, "q")["id"]
    for spec_id in ids:
        queues.queue_add_spec(store, queue, spec_id)
    work = (
        f'echo "start $CANOPY_SPEC_ID" >> "{effects}"; sleep 3;'
        ' echo "$CANOPY_SPEC_NAME" > "$CANOPY_SPEC_ID.txt" && git add -A'
        f' && git commit -q -m "$CANOPY_SPEC_NAME" && echo "end $CANOPY_SPEC_ID" >> "{effects}"'
    )
    graph = graphs.graph_create(
        store,
        {
            "name": "wide",
            "workdir": str(repo),
            "lanes": 4,
            "nodes": [{"name": "work", "command": work}],
            "hooks": {"on_spec_completed": [{"command": f'echo "{{{{spec_id}}}}" >> "{hooks}"'}]},
        },
    )
    return graph["id"], names, ids


def four_started(effects: Path) -> bool:
    return sum(line.startswith("start ") for line in file_lines(effects)) >= 4


def assert_each_once(
    repo: Path, effects: Path, hooks: Path, names: list[str], ids: list[str]
) -> None:
    """Every node ran once to its end, every spec landed once in queue order, every hook
    fired once, and no lane is left."""
    assert git(repo, "log", "--reverse", "--format=%s", "main").splitlines() == ["initial", *names]
    assert Counter(file_lines(effects)) == Counter(
        [f"start {spec_id}" for spec_id in ids] + [f"end {spec_id}" for spec_id in ids]
    )
    assert sorted(file_lines(hooks)) == sorted(ids)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--format=%(refname:short)").split() == ["main"]


async def test_a_sigkilled_worker_mid_lanes_integrates_and_fires_each_spec_once(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    effects, hooks = tmp_path / "effects", tmp_path / "hooks"
    graph, names, ids = lanes_graph(repo, effects, hooks)
    daemons.start_worker()
    await runs.graph_run(open_store(), graph, queue="q")
    await eventually(lambda: four_started(effects), "four lanes at work", TIMEOUT)
    daemons.kill_worker()
    daemons.start_worker()
    settled = await runs.wait_until_settled(open_store(), graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert_each_once(repo, effects, hooks, names, ids)


async def test_a_sigkilled_dev_server_mid_lanes_integrates_and_fires_each_spec_once(
    daemons: Daemons, repo: Path, tmp_path: Path
) -> None:
    effects, hooks = tmp_path / "effects", tmp_path / "hooks"
    graph, names, ids = lanes_graph(repo, effects, hooks)
    daemons.start_worker()
    await runs.graph_run(open_store(), graph, queue="q")
    await eventually(lambda: four_started(effects), "four lanes at work", TIMEOUT)
    daemons.kill_server()
    # not a synchronisation: the outage itself, outlasting the heartbeat timeout
    await asyncio.sleep(3 * HEARTBEAT_TIMEOUT)
    daemons.start_server()
    settled = await runs.wait_until_settled(open_store(), graph, TIMEOUT)
    assert settled["status"] == "completed", settled
    assert_each_once(repo, effects, hooks, names, ids)
