"""One data dir talks to one server: the one it started, on the ports it started it on,
whether that server runs or not. A second Canopy on other ports, once its server is
stopped, never reaches the first one's server through any command (two real dev
servers, the CLI as users run it); and a run is never steered through another Temporal
than the one it was started on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from canopy.errors import Refused
from canopy.ops import control, graphs, runs
from canopy.store.engine import open_store
from tests.conftest import make_specs, snapshot
from tests.daemons import TIMEOUT, free_ports
from tests.engine import git_repo, make_graph

pytestmark = pytest.mark.server


def canopy(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``canopy ARGS`` with ``CANOPY_HOME=home``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "canopy.cli.main", *args],
        env={**os.environ, "CANOPY_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two data dirs; whatever servers they start are stopped at the end."""
    first, second = tmp_path / "first", tmp_path / "second"
    try:
        yield first, second
    finally:
        for home in (first, second):
            canopy(home, "down")


def test_a_stopped_data_dirs_commands_never_reach_another_server(
    homes: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = homes
    port, ui_port, other_port, other_ui_port = map(str, free_ports(4))
    assert canopy(first, "server", "start", "--port", port, "--ui-port", ui_port).returncode == 0
    started = canopy(second, "server", "start", "--port", other_port, "--ui-port", other_ui_port)
    assert started.returncode == 0, started.stderr
    assert canopy(second, "server", "stop").returncode == 0

    down = f"cannot reach Temporal at 127.0.0.1:{other_port}"
    check = canopy(second, "server", "check", "--json")
    assert json.loads(check.stdout)["serving"] is False
    assert down in json.loads(check.stdout)["problem"]
    assert canopy(second, "env").stdout == (
        f"export TEMPORAL_ADDRESS=127.0.0.1:{other_port}\nexport TEMPORAL_NAMESPACE=default\n"
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    made = canopy(second, "session", "new", "--platform", "demo", "--name", "pair",
                  "--workdir", str(workdir))  # fmt: skip
    assert made.returncode == 0, made.stderr
    sent = canopy(second, "session", "send", "pair", "Offline note")
    assert sent.returncode == 0, sent.stderr
    assert "warning: stored as queued, but not handed to the daemon yet" in sent.stdout
    assert down in sent.stdout
    listed = canopy(first, "server", "check", "--json")
    assert down not in listed.stdout, "the first data dir still reaches its own server"

    again = canopy(second, "server", "start", "--json")  # no flags: its own ports again
    assert again.returncode == 0, again.stderr
    assert (json.loads(again.stdout)["port"], json.loads(again.stdout)["ui_port"]) == (
        int(other_port),
        int(other_ui_port),
    )
    assert "daemon down: no worker polls" in canopy(second, "server", "check").stdout


async def test_a_run_is_never_steered_through_another_server_than_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run records the Temporal it was started on; once the data dir talks to another
    (here: TEMPORAL_ADDRESS set), steering it and checking it say so in one line naming
    both, and nothing is sent."""
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CANOPY_DB_URL", raising=False)
    store = open_store()
    (spec,) = make_specs(store, "alpha")
    graph = make_graph(store, git_repo(tmp_path / "repo"), [{"name": "n", "command": "true"}],
                       specs=[spec])  # fmt: skip
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:17233")
    prepared = runs.prepare_run(store, graph)  # recorded; the workflow is not asked
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:27233")
    said = (
        f"run {prepared.start.run_id} of graph build was started on Temporal at "
        "127.0.0.1:17233, but this data dir now talks to 127.0.0.1:27233; to reach it "
        "there: TEMPORAL_ADDRESS=127.0.0.1:17233 canopy …"
    )
    before = snapshot(store)
    with pytest.raises(Refused) as refused:
        await control.graph_pause(store, graph)
    assert refused.value.message == said
    assert snapshot(store) == before
    info = graphs.graph_info(store, graph)
    assert info.runs[0].temporal_address == "127.0.0.1:17233"
    assert await control.consistency_warning(info) == said
