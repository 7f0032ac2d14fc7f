"""``canopy graph wait`` as a user runs it: what it shows while a run works, on a terminal
and piped, against a real run on the dev server."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.ops import runs
from canopy.store.engine import Store
from tests import engine
from tests.cli_helpers import Terminal
from tests.conftest import make_specs
from tests.engine import eventually, make_graph, node_run_of

pytestmark = pytest.mark.server

store = engine.home_store


async def test_wait_shows_the_spec_and_node_running_on_a_terminal_only(
    serving: Client, store: Store, repo: Path, tmp_path: Path
) -> None:
    (spec,) = make_specs(store, "alpha")
    release = tmp_path / "release"
    work = {"name": "work", "command": f"while [ ! -e {release} ]; do sleep 0.1; done"}
    make_graph(store, repo, [work], specs=[spec])
    await runs.graph_run(store, "build")
    await eventually(lambda: node_run_of(store, spec, "running"), "the node to start")

    wait = [sys.executable, "-m", "canopy.cli.main", "graph", "wait", "build"]
    env = dict(os.environ)  # this test's CANOPY_HOME and TEMPORAL_ADDRESS
    watched = Terminal(wait, env)
    piped = subprocess.Popen(wait, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    shown = f"build: spec alpha ({spec}), node work running for "
    await eventually(lambda: shown in watched.seen, "graph wait to show the node in flight")
    release.touch()

    result = await asyncio.to_thread(watched.finish)
    assert (result.code, result.stdout) == (0, "build: completed\n")
    out, err = await asyncio.to_thread(piped.communicate, timeout=120)
    assert (piped.returncode, out, err) == (0, b"build: completed\n", b"")
