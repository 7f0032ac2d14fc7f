"""Detached processes (activities/detached.py): launched at most once, adopted by a retry,
reported when lost, stopped past their deadline, killed only by a requested cancel.
Run in Temporal's activity environment."""

import asyncio
import os
import signal
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from canopy.activities.detached import LOST, Command, ProcessEnd, ProcessFiles, run_once
from tests.engine import alive, eventually


async def attempt(
    files: ProcessFiles,
    script: str,
    cwd: Path,
    timeout_minutes: float | None = 5.0,
    stdin: str | None = None,
    environment: ActivityEnvironment | None = None,
    stall_minutes: float | None = None,
) -> ProcessEnd:
    """One activity attempt running ``script`` detached."""
    command = Command(["/bin/sh", "-c", script], str(cwd), {"GREETING": "hi"}, stdin)
    return await (environment or ActivityEnvironment()).run(
        run_once,
        files,
        lambda: command,
        timeout_minutes=timeout_minutes,
        stall_minutes=stall_minutes,
    )


@pytest.fixture
def files(tmp_path: Path) -> ProcessFiles:
    return ProcessFiles(tmp_path / "process")


def launches(tmp_path: Path) -> int:
    count = tmp_path / "launches"
    return len(count.read_text().splitlines()) if count.exists() else 0


async def test_a_process_reports_its_exit_code_and_output(
    files: ProcessFiles, tmp_path: Path
) -> None:
    assert await attempt(files, 'echo "$GREETING"; exit 3', tmp_path) == ProcessEnd(3)
    assert files.output.read_text() == "hi\n"


async def test_stdin_carries_text_of_any_size(files: ProcessFiles, tmp_path: Path) -> None:
    prompt = "x" * 300_000 + "\n- a prompt that starts like an option"
    assert await attempt(files, "cat", tmp_path, stdin=prompt) == ProcessEnd(0)
    assert files.output.read_text() == prompt


async def test_a_retry_after_the_process_ended_reads_its_end_without_relaunching(
    files: ProcessFiles, tmp_path: Path
) -> None:
    script = f"echo launch >> {tmp_path / 'launches'}"
    assert await attempt(files, script, tmp_path) == ProcessEnd(0)
    assert await attempt(files, script, tmp_path) == ProcessEnd(0)
    assert launches(tmp_path) == 1


async def test_a_retry_adopts_a_process_still_running_after_its_attempt_went_away(
    files: ProcessFiles, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    script = (
        f"echo launch >> {tmp_path / 'launches'}; "
        f"while [ ! -e {release} ]; do sleep 0.05; done; exit 7"
    )
    first = asyncio.create_task(attempt(files, script, tmp_path))
    await eventually(lambda: launches(tmp_path), "the process to launch", 30)
    first.cancel()  # the attempt is gone (worker shutdown, server timeout); the process is not
    with pytest.raises(asyncio.CancelledError):
        await first
    retry = asyncio.create_task(attempt(files, script, tmp_path))
    await asyncio.sleep(0)
    assert not retry.done()
    release.touch()
    assert await asyncio.wait_for(retry, 30) == ProcessEnd(7)
    assert launches(tmp_path) == 1


async def test_a_requested_cancel_kills_the_process(files: ProcessFiles, tmp_path: Path) -> None:
    environment = ActivityEnvironment()
    running = asyncio.create_task(
        attempt(
            files,
            f"echo launch >> {tmp_path / 'launches'}; sleep 60",
            tmp_path,
            None,
            None,
            environment,
        )
    )
    await eventually(lambda: launches(tmp_path), "the process to launch", 30)
    await eventually(lambda: files.started.read_text().strip(), "the runner's pid", 30)
    environment.cancel()  # a stop: the workflow asked for the cancel
    with pytest.raises(asyncio.CancelledError):
        await running
    pid = int(files.started.read_text())
    await eventually(lambda: not alive(pid), "the process group to die", 30)


async def test_a_process_started_but_lost_is_reported_not_relaunched(
    files: ProcessFiles, tmp_path: Path
) -> None:
    files.directory.mkdir()
    files.started.write_text("999999")  # launched once; no runner, no exit status
    script = f"echo launch >> {tmp_path / 'launches'}"
    assert await attempt(files, script, tmp_path) == ProcessEnd(None, LOST)
    assert launches(tmp_path) == 0
    files.set_lost_aside()  # what an agent node does: it may start again, resuming
    assert await attempt(files, script, tmp_path) == ProcessEnd(0)
    assert launches(tmp_path) == 1
    assert (files.directory / "started.lost-1").read_text() == "999999"


async def test_a_process_past_its_deadline_is_stopped(files: ProcessFiles, tmp_path: Path) -> None:
    ended = await asyncio.wait_for(attempt(files, "sleep 60", tmp_path, timeout_minutes=0.005), 30)
    assert ended.exit_code is None and ended.timed_out
    assert ended.problem == "ran longer than 0.005 minutes and was stopped"
    # the kernel drops the lock before it marks the runner exited: a moment's race
    runner = int(files.started.read_text())
    await eventually(lambda: not alive(runner), "the runner to be gone", 5)


async def test_a_silent_process_is_stopped_with_its_children(
    files: ProcessFiles, tmp_path: Path
) -> None:
    """A process that prints nothing for ``stall_minutes`` is killed, its group with it."""
    script = f"echo started; sleep 60 & echo $! > {tmp_path / 'child'}; wait"
    ended = await asyncio.wait_for(attempt(files, script, tmp_path, stall_minutes=0.01), 30)
    assert ended == ProcessEnd(
        None, "printed nothing for 0.01 minutes and was stopped", stalled=True
    )
    child = int((tmp_path / "child").read_text())
    await eventually(lambda: not alive(child), "the silent process's child to die", 5)


async def test_a_process_that_keeps_printing_is_not_stalled(
    files: ProcessFiles, tmp_path: Path
) -> None:
    """Silence is measured from the last output, not from the start (1.2 s allowed here,
    the script prints every 0.2 s for 2 s)."""
    script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick; sleep 0.2; done"
    ended = await asyncio.wait_for(attempt(files, script, tmp_path, stall_minutes=0.02), 30)
    assert ended == ProcessEnd(0)
    assert files.output.read_text().count("tick") == 10


async def test_a_child_left_behind_does_not_hold_the_process_open(
    files: ProcessFiles, tmp_path: Path
) -> None:
    """Only the runner holds the lock: the command's children never inherit it, so the end
    is seen when the command exits, whatever it left running."""
    script = f"sleep 60 & echo $! > {tmp_path / 'left'}"
    try:
        ended = await asyncio.wait_for(attempt(files, script, tmp_path), timeout=30)
        assert ended == ProcessEnd(0)
    finally:
        left = tmp_path / "left"
        if left.exists():
            os.kill(int(left.read_text()), signal.SIGKILL)


async def test_a_command_gets_sigpipe_as_a_shell_would(files: ProcessFiles, tmp_path: Path) -> None:
    """Python ignores SIGPIPE; the command must not: ``yes`` ends on it, silently."""
    assert await attempt(files, "yes | head -1", tmp_path) == ProcessEnd(0)
    assert files.output.read_text() == "y\n"
