"""The installed distribution: one import name, and every documented way to start the worker.

The top-level directories ``cli/``, ``workflows/``, ``activities/`` and ``worker.py`` install
as ``canopy.*`` so that another project's ``cli`` or ``activities`` package in the same
environment cannot shadow them (or be shadowed).
"""

import asyncio
import os
import signal
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 60.0


def test_the_distribution_installs_one_top_level_name() -> None:
    assert distribution("canopy").read_text("top_level.txt") == "canopy\n"


def test_the_console_script_is_the_packaged_cli() -> None:
    scripts = distribution("canopy").entry_points.select(group="console_scripts")
    assert {script.name: script.value for script in scripts} == {"canopy": "canopy.cli.main:main"}


@pytest.mark.server
@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "worker.py"],
        [sys.executable, "-m", "canopy.worker"],
        [str(Path(sys.executable).parent / "canopy"), "worker"],
    ],
    ids=["python worker.py", "python -m canopy.worker", "canopy worker"],
)
async def test_every_documented_command_starts_the_worker(
    command: list[str], temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CANOPY_HOME": str(tmp_path),
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
    }
    worker = await asyncio.create_subprocess_exec(
        *command,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert worker.stdout is not None
    try:
        lines: list[str] = []
        while not any("serving task queues" in line for line in lines):
            line = await asyncio.wait_for(worker.stdout.readline(), READY_TIMEOUT)
            assert line, "".join(lines)
            lines.append(line.decode())
        worker.send_signal(signal.SIGTERM)
        rest, _ = await asyncio.wait_for(worker.communicate(), READY_TIMEOUT)
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
    assert worker.returncode == 0, "".join(lines) + rest.decode()
    assert "worker shut down cleanly" in rest.decode()
