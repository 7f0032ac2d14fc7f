"""The session id a fresh agent run takes, where its CLI lets Canopy choose one: known
before the CLI prints anything, the same for every attempt at one node run, and resumed
after a lost launch only where the CLI's own history holds it (Claude Code refuses a
``--session-id`` it has seen, "already in use")."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from canopy.activities.detached import ProcessFiles
from canopy.activities.nodes import _session_to_resume, chosen_session_id
from canopy.contracts.graph_run import NodeLaunch
from canopy.graphs.nodemodels import stored_node
from canopy.platforms.claude import ClaudePlatform


def launch(workdir: Path, node_run_id: int = 7) -> NodeLaunch:
    return NodeLaunch(
        run_id="run-1",
        node_run_id=node_run_id,
        graph_id="graph-1",
        graph_name="g",
        spec_id="spec-1",
        workdir=str(workdir),
        node=stored_node({"name": "a", "platform": "claude", "prompt": "p"}),
    )


def test_the_chosen_id_is_a_uuid_fixed_per_node_run(tmp_path: Path) -> None:
    chosen = chosen_session_id(launch(tmp_path))
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", chosen
    )
    assert chosen == chosen_session_id(launch(tmp_path))  # an adopting attempt knows it
    assert chosen != chosen_session_id(launch(tmp_path, node_run_id=8))


@pytest.fixture
def files(tmp_path: Path) -> ProcessFiles:
    directory = tmp_path / "node-run"
    directory.mkdir()
    return ProcessFiles(directory)


def claude_session(workdir: Path, session_id: str) -> None:
    """A conversation file where Claude Code keeps one for ``workdir``."""
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folder = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(workdir.resolve()))
    folder.mkdir(parents=True)
    event = {
        "type": "user",
        "cwd": str(workdir.resolve()),
        "sessionId": session_id,
        "timestamp": "2026-12-04T22:00:00Z",
        "message": {"role": "user", "content": "p"},
    }
    (folder / f"{session_id}.jsonl").write_text(json.dumps(event) + "\n")  # fmt: skip


def test_a_first_launch_takes_the_chosen_id_and_a_given_session_is_resumed(
    tmp_path: Path, files: ProcessFiles
) -> None:
    node = launch(tmp_path)
    chosen = chosen_session_id(node)
    claude = ClaudePlatform()
    assert _session_to_resume(chosen, chosen, claude, node, files) is None
    assert _session_to_resume("warm-group-session", chosen, claude, node, files) == (
        "warm-group-session"
    )
    assert _session_to_resume(None, None, claude, node, files) is None


def test_a_lost_launch_resumes_the_chosen_id_only_where_the_cli_started_it(
    tmp_path: Path, files: ProcessFiles
) -> None:
    node = launch(tmp_path)
    chosen = chosen_session_id(node)
    claude = ClaudePlatform()
    files.started.write_text("123")
    files.set_lost_aside()
    assert files.relaunched
    assert _session_to_resume(chosen, chosen, claude, node, files) is None  # never started
    claude_session(tmp_path, chosen)
    assert _session_to_resume(chosen, chosen, claude, node, files) == chosen
