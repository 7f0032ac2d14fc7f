"""``canopy doctor`` against the real CLIs: what it finds, from the data dir's graphs,
hooks and sessions, and that it never calls a model (the scripted servers hear nothing)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from canopy.ops import graphs, sessions
from canopy.ops.doctor import doctor, report_lines
from canopy.store.engine import Store, open_store
from tests.real_agents import CLIS, RealAgents, real_agents


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "canopy-home"
    path.mkdir()
    monkeypatch.setenv("CANOPY_HOME", str(path))
    monkeypatch.delenv("CANOPY_DB_URL", raising=False)
    return path


@pytest.fixture
def agents(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RealAgents]:
    with real_agents(home, tmp_path / "cli-home", monkeypatch.setenv) as found:
        yield found


def heard(agents: RealAgents) -> int:
    """How many requests all the scripted models received."""
    return sum(len(agents.servers[name].requests) for name in CLIS)


def test_doctor_checks_each_cli_at_each_level_it_is_used_at(
    agents: RealAgents, home: Path, tmp_path: Path
) -> None:
    store: Store = open_store()
    graphs.graph_create(
        store,
        {
            "name": "build",
            "workdir": str(tmp_path),
            "nodes": [
                {"name": "plan", "platform": "gemini", "prompt": "p", "permissions": "read-only"},
                {"name": "code", "platform": "claude", "prompt": "p"},
            ],
            "hooks": {
                "on_failed": [{"platform": "claude", "prompt": "why?", "permissions": "cli"}]
            },
        },
    )
    sessions.session_new(store, "gemini", name="pair", workdir=str(tmp_path))
    report = doctor(store)
    checked = {platform.platform: platform for platform in report.platforms}
    assert sorted(checked) == ["claude", "gemini"]
    claude, gemini = checked["claude"], checked["gemini"]
    pinned = json.loads((Path(__file__).parents[1] / "package.json").read_text())["dependencies"]
    assert claude.version == pinned["@anthropic-ai/claude-code"] in claude.tested_versions
    assert gemini.version == pinned["@google/gemini-cli"] in gemini.tested_versions
    assert claude.signed_in is True and gemini.signed_in is not False
    levels = {(p, level.level): level for p, c in checked.items() for level in c.levels}
    assert sorted(levels) == [
        ("claude", "cli"), ("claude", "workspace"), ("gemini", "read-only"), ("gemini", "workspace")
    ]  # fmt: skip
    assert levels["gemini", "workspace"].used_by == ["session pair"]
    assert levels["claude", "cli"].used_by == ["graph build, hook on_failed[0]"]
    assert all(level.accepted for level in levels.values()), levels
    assert report.ok, report_lines(report)
    assert heard(agents) == 0, "doctor asked a model"


def test_doctor_says_what_would_stop_a_run_with_the_fix(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody signed in to Claude Code, and a user-defined CLI that is not installed."""
    signed_out = {"ANTHROPIC_API_KEY": ""}
    with real_agents(home, tmp_path / "cli-home", monkeypatch.setenv, signed_out) as agents:
        config = home / "config.toml"
        extra = '\n[platforms.mytool]\nargv = ["no-such-agent-cli", "{prompt}"]\n'
        config.write_text(config.read_text() + extra)
        store = open_store()
        nodes = [
            {"name": "a", "platform": "claude", "prompt": "p"},
            {"name": "b", "platform": "mytool", "prompt": "p"},
        ]
        graphs.graph_create(store, {"name": "g", "workdir": str(tmp_path), "nodes": nodes})
        report = doctor(store)
        assert heard(agents) == 0
    lines = "\n".join(report_lines(report))
    assert not report.ok
    assert "problem: nobody is signed in to claude; fix:" in lines
    assert "problem: no-such-agent-cli is not installed (not on PATH); fix:" in lines
    assert lines.endswith("not ok: claude, mytool would stop a run (see the problems above)")
