"""Running the real ``canopy`` CLI in a subprocess against a temporary ``CANOPY_HOME``."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CANOPY_", "TEMPORAL_"))}
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
