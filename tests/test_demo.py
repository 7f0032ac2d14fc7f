"""``make demo`` keeps working: the tour runs end to end on a scratch data dir."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import run_canopy
from tests.daemons import free_ports, stop_recorded_daemons
from tests.engine import git


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """The demo's data dir; the server and worker it leaves running are stopped after."""
    home = tmp_path / "demo-home"
    try:
        yield home
    finally:
        stop_recorded_daemons(home)


@pytest.mark.server
def test_demo_tour_runs_a_real_graph_over_the_queue_and_runs_again(
    tmp_path: Path, scratch: Path
) -> None:
    port, ui_port = free_ports(2)
    tour = ("demo", "--home", str(scratch), "--port", str(port), "--ui-port", str(ui_port))
    first = run_canopy(tmp_path, *tour)
    assert first.code == 0, first.stdout + first.stderr
    result = run_canopy(tmp_path, *tour)  # again: the first tour's daemons are replaced
    assert result.code == 0, result.stdout + result.stderr
    assert "error: spec body refused: unknown tag <notes>" in result.stdout
    assert "error: queue reorder refused: group 'auth'" in result.stdout
    assert "build: completed" in result.stdout
    assert f"http://localhost:{ui_port}/namespaces/default/workflows/canopy-graph-" in result.stdout
    commits = git(scratch / "workdir", "log", "--format=%s").splitlines()
    assert commits == ["demo: Add a logout button", "demo: Add a login page", "initial"]


def test_demo_never_wipes_a_directory_it_did_not_make(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    result = run_canopy(tmp_path, "demo", "--home", str(precious))
    assert result.code == 1
    assert "refusing to wipe" in result.stderr
    assert (precious / "notes.txt").read_text() == "keep me"
