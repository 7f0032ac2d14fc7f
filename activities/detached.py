"""Processes that outlive the activity attempt that started them: started once, never lost.

A node, a hook or a session turn must not run twice: a command's effect would happen
twice, an agent would be relaunched over its own half-done work, a prompt would enter a
conversation twice. Yet the activity that runs it can lose its worker (kill -9), or
its server (an outage longer than the heartbeat timeout makes Temporal retry an attempt
that is still healthy). So the process runs detached from the worker (its own session,
no parent-death signal) under :mod:`canopy.activities.detached_runner`, in a directory keyed by
what it runs for (a node run, a hook run, a message), holding:

- ``lock``: flock-ed by the runner for as long as it lives (inherited, so it is held
  from the instant the runner exists, with no window in between);
- ``started``: written before the launch (then holding the runner's pid), so a process is
  launched at most once, whatever crashes;
- ``exit``: the exit status, published atomically when the process ends;
- ``input``: what the process reads on stdin (an agent's prompt; empty for most);
- ``output.log``: everything the process printed.

Any later attempt therefore adopts the process: lock held → wait for it; ``exit``
present → it finished; ``started`` without ``exit`` and nobody holding the lock → it was
lost (the machine went down) and is reported, never silently started again.

Only an explicit cancel (``stop``), a deadline (``timeout_minutes``) or a stall (no output
for ``stall_minutes``) kills the process. An attempt cancelled because its worker shuts
down or the server has given up on it leaves the process running for the attempt that
adopts it.
"""

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import activity

from canopy.activities import detached_runner
from canopy.paths import OUTPUT_LOG
from canopy.platforms import LONG_RETRY_WAIT, Platform, RetryNotice

HEARTBEAT_SECONDS = 1.0
OUTPUT_TAIL_LINES = 200
"""Output lines kept in memory (usage-limit detection, hook output); the log has it all."""
LOST = (
    "the process was lost before it finished (was the machine restarted?); it was not "
    "started again, to avoid running it twice"
)


@dataclass(frozen=True)
class ProcessFiles:
    """The files of one detached process's directory, and what the process is for (its
    spec and node, say), which its heartbeats name."""

    directory: Path
    about: dict[str, str] = field(default_factory=dict)

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
    def input(self) -> Path:
        return self.directory / "input"

    @property
    def output(self) -> Path:
        return self.directory / OUTPUT_LOG

    def open_lock(self) -> int:
        """A new descriptor on the lock file (created if need be), for ``flock``."""
        return os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)

    @property
    def relaunched(self) -> bool:
        """Whether a launch was lost before this one (:meth:`set_lost_aside`)."""
        return any(self.directory.glob("started.lost-*"))

    def set_lost_aside(self) -> None:
        """Keep a lost launch's marker as ``started.lost-N`` so the next launch may start.

        Only for processes that may safely start again after a machine restart (an
        agent resuming its own harness session); the output log keeps both launches.
        """
        number = 1 + sum(1 for _ in self.directory.glob("started.lost-*"))
        self.started.rename(self.directory / f"started.lost-{number}")


@dataclass(frozen=True)
class Command:
    """What to start: argv, working directory, extra environment, and stdin text."""

    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    """Written to ``input`` and read by the process on stdin (a prompt of any size)."""


@dataclass(frozen=True)
class LongRetry:
    """A retry the harness announced it would sleep for too long before (an in-CLI wait
    for a quota to reset): the notice, and when it said so (epoch seconds)."""

    notice: RetryNotice
    at: float


@dataclass(frozen=True)
class ProcessEnd:
    """How a process ended: an exit status, or ``None`` with the problem."""

    exit_code: int | None
    problem: str | None = None
    timed_out: bool = False
    stalled: bool = False
    long_retry: LongRetry | None = None
    """Stopped because the harness announced it would sleep this long before a retry."""

    @property
    def lost(self) -> bool:
        return self.problem == LOST


def exit_reason(exit_code: int, output: str = "") -> str:
    """``exit code 3`` or ``killed by signal 9``, for a failed run's record; for a command
    that never started, the runner's reason from its ``output`` (``cannot run claude:
    [Errno 2] No such file or directory``), which the bare 127 would hide in the log."""
    if exit_code < 0:
        return f"killed by signal {-exit_code}"
    if exit_code == detached_runner.EXEC_FAILED:
        lines = (line.strip() for line in output.splitlines())
        said = next((line for line in lines if line.startswith(detached_runner.CANNOT_RUN)), None)
        if said is not None:
            return said.removeprefix("canopy: ")
    return f"exit code {exit_code}"


class LaunchError(Exception):
    """The process could not be started at all (nothing ran)."""


class OutputWatcher:
    """Reads ``output.log`` as it grows: the last lines, the latest harness session id,
    and how the harness is getting on: when it last made progress (the log's time when a
    progress line was read), the retry notice it printed since, if any, and a retry it
    announced it would sleep too long for (:data:`LONG_RETRY_WAIT`).

    An adopting attempt reads the log from its start, so it knows everything the first
    attempt knew; times are the log's own, so they mean the same to it.
    """

    def __init__(self, path: Path, platform: Platform | None, session_id: str | None) -> None:
        self._path = path
        self._platform = platform
        self._offset = 0
        self._partial = b""
        self._tail: deque[str] = deque(maxlen=OUTPUT_TAIL_LINES)
        self.session_id = session_id
        self.progress_at: float | None = None
        self.notice: RetryNotice | None = None
        self.long_retry: LongRetry | None = None

    @property
    def reads_progress(self) -> bool:
        """Whether progress is read from the lines (a harness), not from any output."""
        return self._platform is not None

    def poll(self) -> None:
        """Take in every complete line written since the last poll."""
        try:
            with self._path.open("rb") as log:
                log.seek(self._offset)
                chunk = log.read()
                written_at = os.fstat(log.fileno()).st_mtime
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for raw in lines:
            self._take(raw + b"\n", written_at)

    def finish(self) -> None:
        """Take in the rest, including a last line without a newline."""
        self.poll()
        if self._partial:
            self._take(self._partial, time.time())
            self._partial = b""

    @property
    def tail(self) -> str:
        return "".join(self._tail)

    def _take(self, raw: bytes, written_at: float) -> None:
        line = raw.decode("utf-8", errors="replace")
        self._tail.append(line)
        if self._platform is None:
            return
        found = self._platform.session_id_from_line(line)
        if found:
            self.session_id = found
        notice = self._platform.retry_notice(line)
        if notice is not None:
            self.notice = notice
            long = notice.wait is not None and notice.wait > LONG_RETRY_WAIT
            if long and self.long_retry is None:
                self.long_retry = LongRetry(notice, written_at)
        elif self._platform.is_progress(line):
            self.progress_at, self.notice, self.long_retry = written_at, None, None


async def run_once(
    files: ProcessFiles,
    command: Callable[[], Command],
    *,
    timeout_minutes: float | None,
    watcher: OutputWatcher | None = None,
    stall_minutes: float | None = None,
) -> ProcessEnd:
    """Start the process (``command()`` is only built then) or adopt the one an earlier
    attempt started, and wait for its end, heartbeating. ``stall_minutes`` (``None`` or
    0: no check) kills a process that has printed nothing for that long."""
    files.directory.mkdir(parents=True, exist_ok=True)
    ended = _start_or_adopt(command, files)
    if ended is None:
        ended = await _wait(files, Limits(timeout_minutes, stall_minutes), watcher)
    if watcher is not None:
        watcher.finish()
    return ended


def _start_or_adopt(command: Callable[[], Command], files: ProcessFiles) -> ProcessEnd | None:
    """Launch unless a runner holds the lock or the process already ended; its end if known."""
    fd = files.open_lock()
    try:
        if not _locked_by_us(fd):
            return None
        ended = _ended(files)
        if ended is not None:
            return ended
        _launch(command(), files, fd)
        return None
    finally:
        os.close(fd)  # the runner keeps the lock through its inherited descriptor


def _launch(command: Command, files: ProcessFiles, lock_fd: int) -> None:
    """Start the runner detached, with the lock inherited; ``started`` names its pid."""
    files.input.write_text(command.stdin or "", encoding="utf-8")
    files.started.write_text("")
    try:
        with files.output.open("ab") as output, files.input.open("rb") as stdin:
            runner = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    detached_runner.__file__,
                    str(files.exit),
                    "--",
                    *command.argv,
                ],
                cwd=command.cwd,
                env={**os.environ, **command.env},
                stdin=stdin,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(lock_fd,),
                start_new_session=True,
            )
    except (OSError, ValueError) as error:
        files.started.unlink()
        raise LaunchError(f"cannot start {command.argv[0]} in {command.cwd}: {error}") from error
    files.started.write_text(str(runner.pid))


def _locked_by_us(fd: int) -> bool:
    """Take the lock without blocking; ``False`` while a runner holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _ended(files: ProcessFiles) -> ProcessEnd | None:
    """The end of a process nobody is running: finished, lost, or ``None`` (never started)."""
    if files.exit.exists():
        return ProcessEnd(int(files.exit.read_text().strip()))
    if files.started.exists():
        return ProcessEnd(None, LOST)
    return None


def _released(files: ProcessFiles) -> None:
    """Block until nobody holds the lock (the runner has exited), then let go.

    Runs in a thread; the lock is dropped at once, so a waiter abandoned by a cancelled
    activity never keeps a process looking alive.
    """
    fd = files.open_lock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Limits:
    """When a waiter kills its process: past a deadline, or after a silence (minutes;
    ``None`` or 0 for no limit)."""

    timeout_minutes: float | None
    stall_minutes: float | None

    def overrun(
        self, files: ProcessFiles, now: float, watcher: OutputWatcher | None
    ) -> ProcessEnd | None:
        """The end to report if the process is past a limit now, else ``None``: its
        deadline, a retry it announced it would sleep too long for, or a stall.

        A harness (``watcher`` reading progress) stalls when it makes no progress: retry
        notices and stray text do not count, so a CLI that only reconnects is stopped.
        Other processes stall when they print nothing. Times are the files' own (when the
        process started, when it last printed), so an attempt adopting the process after a
        worker restart measures the same.
        """
        try:
            started = files.started.stat().st_mtime
        except FileNotFoundError:  # not launched (yet): nothing to measure
            return None
        if self.timeout_minutes and now > started + self.timeout_minutes * 60:
            stopped = f"ran longer than {self.timeout_minutes:g} minutes and was stopped"
            return ProcessEnd(None, stopped, timed_out=True)
        if watcher is not None and watcher.long_retry is not None:
            notice = watcher.long_retry.notice
            return ProcessEnd(
                None,
                f"{notice.message} (stopped: too long a wait inside the CLI)",
                long_retry=watcher.long_retry,
            )
        if not self.stall_minutes:
            return None
        output_at = _last_output(files, started)
        reads_progress = watcher is not None and watcher.reads_progress
        progress_at = (
            max(started, watcher.progress_at or started)
            if watcher and reads_progress
            else output_at
        )
        if now <= progress_at + self.stall_minutes * 60:
            return None
        minutes = f"{self.stall_minutes:g} minutes"
        if watcher is not None and watcher.notice is not None:
            problem = (
                f"could not reach its API: it printed only retry notices for {minutes} "
                f"(last: {watcher.notice.message}) and was stopped"
            )
        elif output_at > progress_at:
            problem = f"made no progress for {minutes} (nothing it printed was) and was stopped"
        else:
            problem = f"printed nothing for {minutes} and was stopped"
        return ProcessEnd(None, problem, stalled=True)


def _last_output(files: ProcessFiles, started: float) -> float:
    """When the process last printed (its log's modification time), else its start."""
    try:
        return max(started, files.output.stat().st_mtime)
    except FileNotFoundError:
        return started


async def _wait(files: ProcessFiles, limits: Limits, watcher: OutputWatcher | None) -> ProcessEnd:
    """Heartbeat until the runner lets go of the lock; kill the process past a limit.

    The wait is a blocking lock in a thread, so an end is seen at once, not at the next
    poll. Only a requested cancel (``stop``) kills the process; any other cancellation
    (worker shutdown, the server timing the attempt out) leaves it to the next attempt.
    """
    released = asyncio.ensure_future(asyncio.to_thread(_released, files))
    overrun: ProcessEnd | None = None
    try:
        while not released.done():
            if watcher is not None:
                watcher.poll()
            activity.heartbeat(_details(files, watcher))
            if overrun is None:
                overrun = limits.overrun(files, time.time(), watcher)
                if overrun is not None:
                    kill(files)
            await asyncio.wait({released}, timeout=HEARTBEAT_SECONDS)
    except asyncio.CancelledError:
        details = activity.cancellation_details()
        if details is not None and details.cancel_requested:
            kill(files)
        raise
    return overrun or _ended(files) or ProcessEnd(None, LOST)


def _details(files: ProcessFiles, watcher: OutputWatcher | None) -> dict[str, Any]:
    """Heartbeat details (shown for the pending activity in the Temporal UI): what the
    process is for, its log, where it lives, and the harness session it reported."""
    details: dict[str, Any] = {
        **files.about,
        "log": str(files.output),
        "process": str(files.directory),
    }
    if watcher is not None and watcher.session_id:
        details["session_id"] = watcher.session_id
    return details


def kill(files: ProcessFiles) -> None:
    """SIGKILL the runner's process group (the process and its children)."""
    pid = files.started.read_text().strip() if files.started.exists() else ""
    if pid.isdigit():
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(int(pid), signal.SIGKILL)
