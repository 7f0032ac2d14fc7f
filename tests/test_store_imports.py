"""One way to the store: the CLI, the worker, the TUI and the MCP server reach it through
the store's row runner on the database driver alone. SQLAlchemy (and alembic, which runs
on it) is for migrating a store that is missing or behind, and nothing else."""

import subprocess
import sys
from pathlib import Path

import pytest

from canopy.store.engine import Store
from tests.cli_helpers import canopy_env

CHECK = """
import sys
from canopy.store.engine import open_store
{code}
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("sqlalchemy", "alembic"))
assert not loaded, loaded
"""
"""Runs ``code`` in a fresh interpreter, then fails if it loaded SQLAlchemy or alembic."""

RUN = "from canopy.cli.main import run\nassert run({args!r}) == 0"
"""The CLI's entry point, running one command."""

ENTRY_POINTS = {
    "cli, spec list": RUN.format(args=["spec", "list", "--json"]),
    "cli, typer": RUN.format(args=["session", "recall", "--json"]),
    "cli, a write": RUN.format(args=["queue", "create", "q"]),
    "cli, graph list": RUN.format(args=["graph", "list"]),
    "worker": "from canopy import worker\nworker.activities(open_store())",
    "tui": (
        "from canopy.tui import app, reads\n"
        "reads.read_backlog(open_store(), None)\n"
        "reads.read_activity(open_store(), None, True)"
    ),
    "mcp server": "from canopy.cli.mcp_server import server\nserver.build_server()",
}


def imports_of(home: Path, code: str, env: dict[str, str] | None = None) -> str:
    """Run :data:`CHECK` for ``code`` against the store in ``home``; its stderr, or ``""``."""
    completed = subprocess.run(
        [sys.executable, "-c", CHECK.format(code=code)],
        capture_output=True,
        text=True,
        env=canopy_env(home, **(env or {})),
        timeout=120,
    )
    return completed.stderr if completed.returncode else ""


@pytest.mark.parametrize("code", ENTRY_POINTS.values(), ids=list(ENTRY_POINTS))
def test_no_entry_point_loads_sqlalchemy(tmp_path: Path, code: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    Store(f"sqlite:///{home / 'canopy.db'}").close()  # the store exists, at head
    assert imports_of(home, code) == ""


def test_the_typer_path_loads_no_sqlalchemy_either(tmp_path: Path) -> None:
    """A ``CANOPY_DB_URL`` takes every command through typer and the same store."""
    home = tmp_path / "home"
    home.mkdir()
    url = f"sqlite:///{home / 'canopy.db'}"
    Store(url).close()
    assert imports_of(home, ENTRY_POINTS["cli, spec list"], {"CANOPY_DB_URL": url}) == ""


def test_a_missing_store_is_migrated_into_being(tmp_path: Path) -> None:
    """The one time alembic loads: the first command of a data dir creates the store."""
    home = tmp_path / "home"
    home.mkdir()
    assert "alembic" in imports_of(home, ENTRY_POINTS["cli, spec list"])
    assert Store(f"sqlite:///{home / 'canopy.db'}").revision() is not None
