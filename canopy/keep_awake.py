"""Keeping the machine awake while a run is active on it: a laptop that sleeps at 2 a.m.
stops the agent mid-spec and misses the timer that would resume a run after a usage limit.

The operating system's own inhibitor does the holding, in a child process: on Linux
``systemd-inhibit`` (logind) around ``cat`` reading a pipe from the worker, on macOS
``caffeinate -i -w <worker pid>``. Either ends with the worker however it dies (``cat``
reads end-of-file, ``caffeinate`` watches the pid), so a killed worker never leaves the
machine unable to sleep. Where neither exists or works (a container, logind absent) the
worker runs as before and says so once; ``canopy doctor`` says it up front.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

log = logging.getLogger("canopy.keep_awake")

WHY = "a Canopy graph run is active"
CHECK_TIMEOUT_SECONDS = 5.0
POLL_SECONDS = 30.0
"""How often the worker asks whether a run is active on its host: a run that starts is
covered within this, and sleep is allowed again as soon after the last one ends."""


def inhibitor_argv() -> list[str] | None:
    """The command that holds the sleep inhibitor until it exits, or ``None`` where this
    system has none."""
    if sys.platform == "darwin" and shutil.which("caffeinate"):
        return ["caffeinate", "-i", "-w", str(os.getpid())]
    if shutil.which("systemd-inhibit"):
        return [
            "systemd-inhibit",
            "--what=sleep:idle",
            "--who=Canopy",
            f"--why={WHY}",
            "--mode=block",
            "cat",
        ]
    return None


def availability() -> tuple[bool, str]:
    """Whether the inhibitor can be held here, and what says so (for ``canopy doctor``):
    ``systemd-inhibit`` must reach logind, which ``--list`` proves without holding it."""
    argv = inhibitor_argv()
    if argv is None:
        return False, "no sleep inhibitor here (systemd-inhibit on Linux, caffeinate on macOS)"
    if argv[0] != "systemd-inhibit":
        return True, argv[0]
    try:
        listed = subprocess.run(
            ["systemd-inhibit", "--list", "--no-pager"],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"systemd-inhibit does not answer: {error}"
    if listed.returncode != 0:
        said = (listed.stderr.strip().splitlines() or [f"exit code {listed.returncode}"])[0]
        return False, f"systemd-inhibit cannot take the inhibitor here: {said}"
    return True, "systemd-inhibit"


class SleepInhibitor:
    """The inhibitor, held by a child process between :meth:`hold` and :meth:`release`.

    A child that exits on its own (logind refused it) is reported once and not started
    again until the next release, so a system without one costs one warning per run.
    """

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._process: subprocess.Popen[bytes] | None = None
        self._failed = False

    @property
    def held(self) -> bool:
        """Whether the inhibitor's process is running now."""
        return self._process is not None and self._process.poll() is None

    def hold(self) -> None:
        """Take the inhibitor unless it is held (or failed since the last release)."""
        if self.held or self._failed:
            return
        if self._process is not None:  # it ended by itself: the system refused it
            self._failed = True
            log.warning(
                "could not keep the machine awake: %s exited with code %s",
                self._argv[0],
                self._process.returncode,
            )
            self._process = None
            return
        try:
            self._process = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError as error:
            self._failed = True
            log.warning("could not keep the machine awake: %s", error)
            return
        log.info("keeping the machine awake while a run is active (%s)", self._argv[0])

    def release(self) -> None:
        """Let the machine sleep again: end the inhibitor's process."""
        process, self._process, self._failed = self._process, None, False
        if process is None:
            return
        if process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()  # `cat` ends; systemd-inhibit then releases the lock
            try:
                process.wait(timeout=CHECK_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.terminate()
                process.wait()
            log.info("no run is active: the machine may sleep again")


async def keep_awake_while(
    active: Callable[[], Awaitable[bool]],
    inhibitor: SleepInhibitor,
    poll_seconds: float = POLL_SECONDS,
) -> None:
    """Hold ``inhibitor`` whenever ``active()`` says a run is active, until cancelled
    (then it is released). A failed ``active()`` leaves things as they are until the next
    poll: a blip of the server must not let the machine fall asleep mid-run."""
    try:
        while True:
            try:
                running = await active()
            except Exception as error:  # the next poll asks again
                log.warning("could not tell whether a run is active: %s", error)
            else:
                if running:
                    inhibitor.hold()
                else:
                    inhibitor.release()
            await asyncio.sleep(poll_seconds)
    finally:
        inhibitor.release()
