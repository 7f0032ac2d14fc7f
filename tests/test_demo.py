"""``make demo`` keeps working: the tour runs end to end on a scratch data dir."""

from pathlib import Path

from tests.cli_helpers import run_canopy


def test_demo_tour_runs_and_shows_refusals(tmp_path: Path) -> None:
    scratch = tmp_path / "demo-home"
    result = run_canopy(tmp_path, "demo", "--home", str(scratch))
    assert result.code == 0, result.stderr
    assert "error: spec body refused: unknown tag <notes>" in result.stdout
    assert "error: queue reorder refused: group 'auth'" in result.stdout
    assert "is now skipped" in result.stdout
    assert (scratch / "canopy.db").exists()


def test_demo_never_wipes_a_directory_it_did_not_make(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    result = run_canopy(tmp_path, "demo", "--home", str(precious))
    assert result.code == 1
    assert "refusing to wipe" in result.stderr
    assert (precious / "notes.txt").read_text() == "keep me"
