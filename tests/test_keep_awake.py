"""Keep-awake as a run uses it: the worker's loop asks the real dev server whether a run is
active on this host and holds the sleep inhibitor exactly while one is. This machine has
``systemd-inhibit`` but no logind to grant it, so a stand-in of the same name on PATH
records the options it was given and runs the command that holds the lock, as the real
one does; the argv checked is the one Canopy would give the real one."""

import asyncio
import os
import stat
import time
from functools import partial
from pathlib import Path

import pytest
from temporalio.client import Client

from canopy.errors import Refused
from canopy.keep_awake import SleepInhibitor, availability, inhibitor_argv, keep_awake_while
from canopy.ops import runs
from canopy.ops.doctor import keep_awake_state
from canopy.store.engine import Store
from canopy.temporal import client as temporal_client
from tests import engine
from tests.conftest import make_specs
from tests.engine import eventually, file_lines, make_graph

STAND_IN = """#!/bin/sh
# systemd-inhibit's stand-in: --list answers as logind would; otherwise log the options,
# run the command after them (the lock is held while it runs), log its end.
log={log}
[ "$1" = --list ] && exit {list_exit}
options=""
while [ "${{1#--}}" != "$1" ]; do options="$options $1"; shift; done
echo "held$options -- $*" >> "$log"
"$@"
echo released >> "$log"
"""


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, list_exit: int = 0) -> Path:
    """Put the stand-in ``systemd-inhibit`` first on PATH; the file it logs to."""
    bin_dir, log = tmp_path / "bin", tmp_path / "inhibitor.log"
    bin_dir.mkdir()
    program = bin_dir / "systemd-inhibit"
    program.write_text(STAND_IN.format(log=log, list_exit=list_exit))
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


store = engine.home_store
"""The store the worker's activities write: this test's data dir."""


@pytest.mark.server
async def test_the_inhibitor_is_held_while_a_run_is_active_and_released_after(
    serving: Client,
    store: Store,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = stand_in(tmp_path, monkeypatch)
    argv = inhibitor_argv()
    assert argv is not None
    gate = tmp_path / "gate"
    (alpha,) = make_specs(store, "alpha")
    hold = {"name": "work", "command": f"while [ ! -e {gate} ]; do sleep 0.05; done"}
    graph = make_graph(store, repo, [hold], specs=[alpha])
    active = partial(temporal_client.graph_run_active_on, serving, temporal_client.this_host())
    assert not await active()
    keeping = asyncio.create_task(keep_awake_while(active, SleepInhibitor(argv), 0.1))
    try:
        started = await runs.graph_run(store, graph)
        held = await eventually(lambda: file_lines(log), "the inhibitor held")
        assert held == [
            "held --what=sleep:idle --who=Canopy --why=a Canopy graph run is active "
            "--mode=block -- cat"
        ]
        gate.touch()
        await serving.get_workflow_handle(started["workflow_id"]).result()
        await eventually(lambda: "released" in file_lines(log), "the inhibitor released")
    finally:
        keeping.cancel()
    assert file_lines(log)[1:] == ["released"], "held once, released once"


def test_a_system_whose_inhibitor_refuses_costs_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inhibitor = SleepInhibitor(["sh", "-c", "exit 3"])
    inhibitor.hold()
    deadline = time.monotonic() + 10
    while inhibitor.held:  # the system refuses: its process ends by itself
        assert time.monotonic() < deadline, "the refused inhibitor's process ends"
        time.sleep(0.01)
    for _ in range(3):  # the worker's next polls: the first notices, none starts it again
        inhibitor.hold()
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert warnings == ["could not keep the machine awake: sh exited with code 3"]
    assert not inhibitor.held


def test_doctor_says_whether_the_machine_can_be_kept_awake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANOPY_HOME", str(tmp_path / "home"))
    stand_in(tmp_path, monkeypatch, list_exit=1)
    assert availability() == (False, "systemd-inhibit cannot take the inhibitor here: exit code 1")
    assert keep_awake_state().startswith("unavailable: systemd-inhibit cannot take")
    (tmp_path / "home").mkdir(exist_ok=True)
    config = tmp_path / "home" / "config.toml"
    config.write_text("[agents]\nkeep_awake = false\n")
    assert keep_awake_state() == "off ([agents] keep_awake = false)"
    config.write_text('[agents]\nkeep_awake = "no"\n')
    with pytest.raises(Refused) as refusal:
        keep_awake_state()
    assert str(refusal.value).endswith("agents.keep_awake: 'no' is not true or false")
