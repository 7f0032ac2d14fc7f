"""The README's five-minute tour, run as written: its shell blocks, in order, in one shell.

A newcomer pastes them after ``make demo``; any block that needs an edit to work (a
placeholder, a missing step, an agent that is not installed) fails here. The tour starts
the embedded Temporal server on its default ports, so it runs in a network namespace of
its own (with only loopback up) where the machine allows it: it can neither take nor find
another server on 7233.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOUR = re.compile(r"^## Five-minute tour$(?P<tour>.*?)^## ", re.MULTILINE | re.DOTALL)
SHELL_BLOCK = re.compile(r"^```sh\n(?P<script>.*?)^```$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.server


def tour_script() -> str:
    """The tour's shell blocks, joined, stopping at the first command that fails."""
    found = TOUR.search((REPO / "README.md").read_text())
    assert found, "README.md has a '## Five-minute tour' section"
    blocks = [block["script"] for block in SHELL_BLOCK.finditer(found["tour"])]
    assert len(blocks) >= 5, "the tour's shell blocks"
    return "set -euo pipefail\n" + "\n".join(blocks)


def isolated(argv: list[str]) -> list[str]:
    """``argv`` in a network namespace with only loopback up, where one can be made."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return argv
    return ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv]


def test_the_readme_tour_runs_as_written(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != "CANOPY_HOME"}
    env["TMPDIR"] = str(tmp_path)  # the tour's `mktemp -d`
    done = subprocess.run(
        isolated(["bash", "-c", tour_script()]),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    said = done.stdout + done.stderr
    try:
        assert done.returncode == 0, said[-4000:]
        assert "Users can sign in with email and password." in done.stdout  # spec section
        assert re.search(r'"status": "completed"|status: completed', said), said[-4000:]
        assert "ok: nothing found would stop a run" in done.stdout  # canopy doctor
        assert "delivered" in done.stdout, said[-4000:]  # the session turn
    finally:
        for home in tmp_path.glob("tmp.*/home"):
            subprocess.run(
                isolated(["canopy", "down"]),
                env={
                    **env,
                    "CANOPY_HOME": str(home),
                    "PATH": f"{REPO / '.venv/bin'}:{env['PATH']}",
                },
                capture_output=True,
                timeout=60,
                check=False,
            )
