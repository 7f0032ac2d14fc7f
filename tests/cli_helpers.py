"""Running the real ``canopy`` CLI in a subprocess against a temporary ``CANOPY_HOME``."""

import json
import os
import pty
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import without_temporal_settings


@dataclass
class Result:
    """What one CLI invocation printed and returned."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def canopy_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: our home, no inherited store or server."""
    inherited = without_temporal_settings(os.environ)
    env = {k: v for k, v in inherited.items() if not k.startswith("CANOPY_")}
    env.update({"CANOPY_HOME": str(home), "COLUMNS": "200", **extra})
    return env


def run_canopy(
    home: Path,
    *args: str,
    stdin: str | None = None,
    python_flags: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Result:
    """``canopy ARGS`` as a user would run it (``env``: extra variables); never raises on
    a non-zero exit."""
    completed = subprocess.run(
        [sys.executable, *python_flags, "-m", "canopy.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=canopy_env(home, **(env or {})),
        timeout=120,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


class Terminal:
    """A CLI process whose stderr is a pseudo-terminal while stdout stays a pipe: what a
    person watching would see (progress lines, escape codes and all), collected as it
    arrives so a test can wait on it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        main, side = pty.openpty()
        self.process = subprocess.Popen(
            argv,
            env={**env, "TERM": "xterm", "COLUMNS": "200"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=side,
            text=True,
        )
        os.close(side)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, args=(main,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 4096):
                self._chunks.append(chunk)
        except OSError:  # EIO: the process has closed its end
            pass
        finally:
            os.close(fd)

    @property
    def seen(self) -> str:
        """Everything written to the terminal so far."""
        return b"".join(self._chunks).decode(errors="replace")

    def finish(self, timeout: float = 120) -> Result:
        """Wait for the process; its exit code, stdout, and what the terminal showed."""
        stdout, _ = self.process.communicate(timeout=timeout)
        self._reader.join(timeout)
        return Result(self.process.returncode, stdout, self.seen)
