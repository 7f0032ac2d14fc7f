"""Detached session turns (activities/turns.py): launched at most once, adopted by a retry,
reported when lost, stopped past their deadline. Run in Temporal's activity environment."""

import asyncio
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.turns import LOST, TurnEnd, TurnFiles, run_turn
from tests.engine import eventually


async def turn(files: TurnFiles, script: str, cwd: Path, timeout_minutes: float = 5.0) -> TurnEnd:
    """One delivery attempt running ``script`` as the harness."""
    argv = ["/bin/sh", "-c", script]
    return await ActivityEnvironment().run(
        run_turn, argv, cwd=str(cwd), files=files, timeout_minutes=timeout_minutes
    )


@pytest.fixture
def files(tmp_path: Path) -> TurnFiles:
    return TurnFiles(tmp_path / "turn")


def launches(tmp_path: Path) -> int:
    count = tmp_path / "launches"
    return len(count.read_text().splitlines()) if count.exists() else 0


async def test_a_turn_reports_its_exit_code_and_output(files: TurnFiles, tmp_path: Path) -> None:
    assert await turn(files, "echo hello; exit 3", tmp_path) == TurnEnd(3)
    assert files.output.read_text() == "hello\n"


async def test_a_retry_after_the_turn_ended_reads_its_end_without_relaunching(
    files: TurnFiles, tmp_path: Path
) -> None:
    script = f"echo launch >> {tmp_path / 'launches'}"
    assert await turn(files, script, tmp_path) == TurnEnd(0)
    assert await turn(files, script, tmp_path) == TurnEnd(0)
    assert launches(tmp_path) == 1


async def test_a_retry_adopts_a_turn_still_running_after_its_worker_went_away(
    files: TurnFiles, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    script = (
        f"echo launch >> {tmp_path / 'launches'}; "
        f"while [ ! -e {release} ]; do sleep 0.05; done; exit 7"
    )
    first = asyncio.create_task(turn(files, script, tmp_path))
    await eventually(lambda: launches(tmp_path), "the turn to launch", 30)
    first.cancel()  # the attempt is gone; the detached turn is not
    with pytest.raises(asyncio.CancelledError):
        await first
    retry = asyncio.create_task(turn(files, script, tmp_path))
    await asyncio.sleep(0)
    assert not retry.done()
    release.touch()
    assert await asyncio.wait_for(retry, 30) == TurnEnd(7)
    assert launches(tmp_path) == 1


async def test_a_turn_started_but_lost_is_reported_not_relaunched(
    files: TurnFiles, tmp_path: Path
) -> None:
    files.directory.mkdir()
    files.started.write_text("999999")  # launched once; no runner, no exit status
    script = f"echo launch >> {tmp_path / 'launches'}"
    assert await turn(files, script, tmp_path) == TurnEnd(None, LOST)
    assert launches(tmp_path) == 0


async def test_a_turn_past_its_deadline_is_stopped(files: TurnFiles, tmp_path: Path) -> None:
    ended = await asyncio.wait_for(turn(files, "sleep 60", tmp_path, timeout_minutes=0.005), 30)
    assert ended.exit_code is None
    assert ended.problem == "the turn ran longer than 0.005 minutes and was stopped"
    assert not running(int(files.started.read_text()))


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an unreaped zombie has already stopped)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
