"""Shared fixtures: stores on every configured backend, spec bodies, table snapshots."""

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest

from canopy.backlog.specformat import SECTION_NAMES, render_tagged
from canopy.store import drivers, engine
from canopy.store.engine import Store
from canopy.store.queries import Rows, stored_json
from canopy.timefmt import stored_time

pytest_plugins = ["tests.engine"]

POSTGRES_URL = os.environ.get("CANOPY_TEST_DB_URL")
BACKENDS = ["sqlite", "postgres"] if POSTGRES_URL else ["sqlite"]


def reset_postgres(url: str) -> None:
    """An empty public schema, so each test migrates a fresh database."""
    with psycopg.connect(drivers.target_of(url).address) as connection:
        connection.execute("DROP SCHEMA public CASCADE")
        connection.execute("CREATE SCHEMA public")


TEMPORAL_CONFIG_FILE = "TEMPORAL_CONFIG_FILE"
"""Where temporalio (and the ``temporal`` CLI) read ``temporal.toml``; by default the
developer's own ``~/.config/temporalio/temporal.toml``."""


def pytest_configure(config: pytest.Config) -> None:
    """Shield the suite from the developer's Temporal connection settings: no inherited
    ``TEMPORAL_*`` variable, and ``TEMPORAL_CONFIG_FILE`` naming a ``temporal.toml`` that
    does not exist. A profile or variable of theirs would otherwise choose the server,
    namespace, TLS or API key of every connection a test makes (in process and in the
    CLI and worker processes it starts), and make Canopy treat its own server as external.
    Runs before any fixture; tests that want settings set them with ``monkeypatch``."""
    for name in [name for name in os.environ if name.startswith("TEMPORAL_")]:
        del os.environ[name]
    empty = tempfile.mkdtemp(prefix="canopy-tests-temporal-")
    config.add_cleanup(lambda: shutil.rmtree(empty, ignore_errors=True))
    os.environ[TEMPORAL_CONFIG_FILE] = os.path.join(empty, "temporal.toml")


def without_temporal_settings(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the Temporal settings a test set (``TEMPORAL_ADDRESS`` …), keeping
    the isolated ``TEMPORAL_CONFIG_FILE``: for processes that must find no server."""
    return {
        name: value
        for name, value in env.items()
        if not name.startswith("TEMPORAL_") or name == TEMPORAL_CONFIG_FILE
    }


HARNESS_HOMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
"""Where claude, codex and gemini keep their conversations (and the fake agent writes)."""


@pytest.fixture(autouse=True)
def harness_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every test's harness histories live in its tmp dir, never in a real home."""
    homes = {name: tmp_path / "harness-homes" / name.lower() for name in HARNESS_HOMES}
    for name, path in homes.items():
        monkeypatch.setenv(name, str(path))
    return homes


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL on each backend the run has (SQLite, Postgres)."""
    if request.param == "postgres":
        assert POSTGRES_URL is not None
        reset_postgres(POSTGRES_URL)
        return POSTGRES_URL
    return f"sqlite:///{tmp_path / 'canopy.db'}"


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated store on a fresh database."""
    opened = Store(db_url)
    yield opened
    opened.close()


@pytest.fixture(params=BACKENDS)
def run_store(
    request: pytest.FixtureRequest, canopy_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Store]:
    """The store a test's worker writes (``open_store``) on each backend: SQLite in the
    test's data dir, or a fresh Postgres database through ``CANOPY_DB_URL``, the way a
    deployment at scale configures it."""
    if request.param == "postgres":
        assert POSTGRES_URL is not None
        reset_postgres(POSTGRES_URL)
        monkeypatch.setenv("CANOPY_DB_URL", POSTGRES_URL)
    engine._store_for.cache_clear()  # a Postgres store cached by an earlier test predates the reset
    opened = engine.open_store()
    yield opened
    opened.close()
    engine._store_for.cache_clear()


def body(summary: str = "Do the thing", **sections: str) -> str:
    """A valid tagged body; any section can be overridden by keyword."""
    content = {name: f"The {name} of it." for name in SECTION_NAMES}
    content["summary"] = summary
    content.update(sections)
    return render_tagged(content)


def make_specs(store: Store, *names: str) -> list[str]:
    """One standalone spec per name (summary ``<name> summary``); their ids."""
    from canopy.ops import specs

    return [specs.spec_create(store, name, body(f"{name} summary"))["id"] for name in names]


TABLES = (
    "specs",
    "queues",
    "queue_members",
    "graphs",
    "graph_specs",
    "runs",
    "node_runs",
    "run_specs",
    "hook_runs",
    "sessions",
    "messages",
    "notifications",
)
"""Every table of the store but alembic's own."""


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to prove a refused operation wrote nothing."""
    with store.transaction() as rows:
        return {
            table: sorted(
                tuple(str(value) for value in row.values())
                for row in rows(f"SELECT * FROM {table}", {})
            )
            for table in TABLES
        }


def insert(rows: Rows, table: str, **columns: Any) -> None:
    """One row of ``table``, as the engine would have written it (a test's setup)."""
    values = ", ".join(f":{name}" for name in columns)
    rows(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({values})", columns)


def graph_state(store: Store, graph_id: str) -> dict[str, Any]:
    """The graph's ``status``, ``blocker`` (decoded) and ``updated_at`` (a datetime), read
    fresh."""
    with store.transaction() as rows:
        (row,) = rows(
            "SELECT status, CAST(blocker AS TEXT) AS blocker, updated_at FROM graphs"
            " WHERE id = :id",
            {"id": graph_id},
        )
    return {
        "status": row["status"],
        "blocker": stored_json(row["blocker"]),
        "updated_at": stored_time(row["updated_at"]),
    }


def update(rows: Rows, table: str, row_id: Any, **columns: Any) -> None:
    """Set ``columns`` of the row of ``table`` whose id is ``row_id`` (a test's setup)."""
    assigned = ", ".join(f"{name} = :{name}" for name in columns)
    rows(f"UPDATE {table} SET {assigned} WHERE id = :row_id", {**columns, "row_id": row_id})
