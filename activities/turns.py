"""Session turns that outlive the worker, so a message is delivered exactly once.

A node that loses its worker is simply re-run, resuming its harness session. A session
turn cannot be: the harness has already taken the prompt, and sending it again would
put it into the conversation twice. So a turn runs detached (its own session, no
parent-death signal) under :mod:`activities.turn_runner`, in a turn directory holding:

- ``lock``: flock-ed by the runner for as long as it lives (inherited, so it is held
  from the instant the runner exists, with no window in between);
- ``started``: written before the launch (then holding the runner's pid), so a turn is
  launched at most once, whatever crashes;
- ``exit``: the exit status, published atomically when the harness ends;
- ``output.log``: everything the harness printed.

A retried activity therefore adopts the turn: lock held → wait for it; ``exit`` present
→ it finished; ``started`` without ``exit`` and nobody holding the lock → it was lost
(the machine went down) and is reported, never re-sent.
"""

import asyncio
import fcntl
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from temporalio import activity

from activities import turn_runner
from activities.process import kill_group

HEARTBEAT_SECONDS = 1.0
LOST = (
    "the turn's process was lost before it finished (was the machine restarted?); it was "
    "not sent again, to avoid a duplicate"
)


@dataclass(frozen=True)
class TurnFiles:
    """The files of one turn directory."""

    directory: Path

    @property
    def lock(self) -> Path:
        return self.directory / "lock"

    @property
    def started(self) -> Path:
        return self.directory / "started"

    @property
    def exit(self) -> Path:
        return self.directory / "exit"

    @property
    def output(self) -> Path:
        return self.directory / "output.log"

    def open_lock(self) -> int:
        """A new descriptor on the lock file (created if need be), for ``flock``."""
        return os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended: an exit status, or ``None`` with the problem (lost, timed out)."""

    exit_code: int | None
    problem: str | None = None


class TurnLaunchError(Exception):
    """The turn could not be started at all (nothing was sent)."""


async def run_turn(
    argv: list[str], *, cwd: str, files: TurnFiles, timeout_minutes: float
) -> TurnEnd:
    """Start the turn (or adopt the one an earlier attempt started) and wait for its end."""
    files.directory.mkdir(parents=True, exist_ok=True)
    ended = _start_or_adopt(argv, cwd, files)
    if ended is not None:
        return ended
    return await _wait(files, timeout_minutes)


def _start_or_adopt(argv: list[str], cwd: str, files: TurnFiles) -> TurnEnd | None:
    """Launch unless a runner holds the lock or the turn already ended; its end if known."""
    fd = files.open_lock()
    try:
        if not _locked_by_us(fd):
            return None
        ended = _ended(files)
        if ended is not None:
            return ended
        files.started.write_text("")
        try:
            with files.output.open("ab") as output:
                runner = subprocess.Popen(
                    [sys.executable, "-I", turn_runner.__file__, str(files.exit), "--", *argv],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=(fd,),
                    start_new_session=True,
                )
        except OSError as error:
            files.started.unlink()
            raise TurnLaunchError(f"cannot start the turn in {cwd}: {error}") from error
        files.started.write_text(str(runner.pid))
        return None
    finally:
        os.close(fd)  # the runner keeps the lock through its inherited descriptor


def _locked_by_us(fd: int) -> bool:
    """Take the turn's lock without blocking; ``False`` while a runner holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _ended(files: TurnFiles) -> TurnEnd | None:
    """The end of a turn nobody is running: finished, lost, or ``None`` (never started)."""
    if files.exit.exists():
        return TurnEnd(int(files.exit.read_text().strip()))
    if files.started.exists():
        return TurnEnd(None, LOST)
    return None


def _released(files: TurnFiles) -> None:
    """Block until nobody holds the turn's lock (the runner has exited), then let go.

    Runs in a thread; the lock is dropped at once, so a waiter abandoned by a cancelled
    activity never keeps a turn looking alive.
    """
    fd = files.open_lock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


async def _wait(files: TurnFiles, timeout_minutes: float) -> TurnEnd:
    """Heartbeat until the runner lets go of the lock; kill the turn past its deadline.

    The wait is a blocking lock in a thread, so a turn's end is seen at once, not at the
    next poll. Cancellation (a worker shutting down) leaves the turn running for the next
    attempt.
    """
    deadline = files.started.stat().st_mtime + timeout_minutes * 60
    released = asyncio.ensure_future(asyncio.to_thread(_released, files))
    timed_out = False
    while not released.done():
        activity.heartbeat({"turn": str(files.directory)})
        if not timed_out and time.time() > deadline:
            _kill(files)
            timed_out = True
        await asyncio.wait({released}, timeout=HEARTBEAT_SECONDS)
    if timed_out:
        return TurnEnd(
            None, f"the turn ran longer than {timeout_minutes:g} minutes and was stopped"
        )
    return _ended(files) or TurnEnd(None, LOST)


def _kill(files: TurnFiles) -> None:
    """SIGKILL the runner's process group (the harness and its children)."""
    pid = files.started.read_text().strip()
    if pid.isdigit():
        kill_group(int(pid))
