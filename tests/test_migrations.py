"""Migrations are the only way the schema changes, and they match the models."""

import json
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from canopy.statuses import ACTIVE_RUN_STATUSES
from canopy.store.drivers import target_of
from canopy.store.engine import Store
from canopy.store.migrate import MIGRATIONS_DIR, make_engine
from canopy.store.models import Base
from canopy.store.schema_version import HEAD_REVISION

pytestmark = pytest.mark.store


def test_head_revision_constant_matches_the_migrations() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_heads() == [HEAD_REVISION]


def test_migrated_schema_matches_the_models(store: Store) -> None:
    assert store.revision() == HEAD_REVISION
    engine = make_engine(target_of(store.url))
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    engine.dispose()
    assert differences == []


def test_opening_a_migrated_store_again_is_a_no_op(db_url: str) -> None:
    Store(db_url).close()
    reopened = Store(db_url)
    assert reopened.revision() == HEAD_REVISION
    reopened.close()


def test_sqlite_store_uses_wal_and_foreign_keys(tmp_path: object) -> None:
    store = Store(f"sqlite:///{tmp_path}/c.db")
    with store.transaction() as rows:
        assert rows("PRAGMA journal_mode", {}) == [{"journal_mode": "wal"}]
        assert rows("PRAGMA foreign_keys", {}) == [{"foreign_keys": 1}]
    store.close()


def test_a_legacy_on_completed_column_becomes_an_on_completed_hook(db_url: str) -> None:
    """A database from before event-keyed hooks keeps its completion hook, unattended."""

    engine = make_engine(target_of(db_url))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        connection.execute(text("ALTER TABLE graphs ADD COLUMN on_completed TEXT"))
        legacy = '{"platform": "claude", "prompt": "Update docs for {{completed_specs}}"}'
        existing = '{"on_completed": [{"command": "notify.sh"}]}'
        for graph_id, stored_hooks, on_completed in (
            ("graph-legacy0001", "{}", legacy),
            ("graph-legacy0002", existing, legacy),
            ("graph-legacy0003", "{}", None),
        ):
            connection.execute(
                text(
                    "INSERT INTO graphs (id, name, allow_dirty_start, nodes, ensembles, hooks,"
                    " status, created_at, updated_at, on_completed) VALUES (:id, 'g', false,"
                    " '[]', '{}', :hooks, 'idle', '2026-01-01', '2026-01-01', :legacy)"
                ),
                {"id": graph_id, "hooks": stored_hooks, "legacy": on_completed},
            )
    engine.dispose()
    store = Store(db_url)
    with store.transaction() as rows:
        found = rows("SELECT * FROM graphs ORDER BY id", {})
    store.close()
    columns = set(found[0])
    hooks: dict[str, Any] = {str(row["id"]): row["hooks"] for row in found}
    assert "on_completed" not in columns
    decoded = {k: json.loads(v) if isinstance(v, str) else v for k, v in hooks.items()}
    prompt = {"platform": "claude", "prompt": "Update docs for {{completed_specs}}"}
    assert decoded["graph-legacy0001"] == {"on_completed": [prompt]}
    assert decoded["graph-legacy0002"] == {"on_completed": [{"command": "notify.sh"}, prompt]}
    assert decoded["graph-legacy0003"] == {}


def _insert_run(connection: Any, run_id: str, number: int, status: str) -> None:
    connection.execute(
        text(
            "INSERT INTO runs (id, graph_id, number, workdir, workflow_id, status, started_at)"
            " VALUES (:id, 'graph-race0001', :number, '/srv', 'w', :status, '2026-01-01')"
        ),
        {"id": run_id, "number": number, "status": status},
    )


def _upgrade(db_url: str, revision: str) -> Engine:
    """An engine on ``db_url`` migrated to ``revision``, with one graph in it."""
    engine = make_engine(target_of(db_url))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        connection.execute(
            text(
                "INSERT INTO graphs (id, name, allow_dirty_start, nodes, ensembles, hooks,"
                " status, created_at, updated_at) VALUES ('graph-race0001', 'g', false,"
                " '[]', '{}', '{}', 'running', '2026-01-01', '2026-01-01')"
            )
        )
    return engine


def test_the_store_refuses_a_second_active_run_of_a_graph(db_url: str) -> None:
    engine = _upgrade(db_url, "head")
    with engine.begin() as connection:
        _insert_run(connection, "run-old", 1, "completed")
        _insert_run(connection, "run-live", 2, "running")
    for status in ACTIVE_RUN_STATUSES:
        with pytest.raises(IntegrityError), engine.begin() as connection:
            _insert_run(connection, "run-second", 3, status)
    with engine.begin() as connection:
        _insert_run(connection, "run-settled", 3, "failed")
    engine.dispose()


def test_upgrading_keeps_only_the_newest_of_two_active_runs(db_url: str) -> None:
    """A database written before the index may hold the pair the index forbids."""
    engine = _upgrade(db_url, "0004")
    with engine.begin() as connection:
        _insert_run(connection, "run-first", 1, "running")
        _insert_run(connection, "run-second", 2, "paused")
    engine.dispose()
    store = Store(db_url)
    with store.transaction() as rows:
        found = rows("SELECT id, status, ended_at FROM runs ORDER BY id", {})
    store.close()
    assert [(row["id"], row["status"], row["ended_at"] is not None) for row in found] == [
        ("run-first", "reset", True),
        ("run-second", "paused", False),
    ]


def test_upgrading_keeps_graphs_and_gives_them_no_host(db_url: str) -> None:
    """Graphs stored before graphs named a host keep every field; runs go, as before, to
    the machine that starts them."""
    engine = _upgrade(db_url, "0006")
    with engine.begin() as connection:
        _insert_run(connection, "run-first", 1, "completed")
    engine.dispose()
    store = Store(db_url)
    with store.transaction() as rows:
        (graph,) = rows("SELECT id, name, status, host FROM graphs", {})
        runs = rows("SELECT id, status FROM runs", {})
    store.close()
    assert tuple(graph.values()) == ("graph-race0001", "g", "running", None)
    assert [tuple(run.values()) for run in runs] == [("run-first", "completed")]


def test_upgrading_keeps_node_runs_and_gives_them_no_host(db_url: str) -> None:
    """Node runs recorded before hosts were keep every field; their host is unknown."""
    engine = _upgrade(db_url, "0005")
    with engine.begin() as connection:
        _insert_run(connection, "run-first", 1, "completed")
        connection.execute(
            text(
                "INSERT INTO node_runs (run_id, spec_id, node, visit, status, started_at)"
                " VALUES ('run-first', 'spec-1', 'check', 1, 'succeeded', '2026-01-01')"
            )
        )
    engine.dispose()
    store = Store(db_url)
    with store.transaction() as rows:
        found = rows("SELECT node, status, host FROM node_runs", {})
    store.close()
    assert [tuple(row.values()) for row in found] == [("check", "succeeded", None)]


def test_upgrading_keeps_node_and_hook_runs_with_no_usage(db_url: str) -> None:
    """Node runs and hook runs recorded before the usage ledger keep every field; what
    they used is unknown (``NULL``), never a made-up zero."""
    engine = _upgrade(db_url, "0007")
    with engine.begin() as connection:
        _insert_run(connection, "run-first", 1, "completed")
        connection.execute(
            text(
                "INSERT INTO node_runs (run_id, spec_id, node, visit, platform, status,"
                " exit_code, log_path, harness_session_id, host, started_at) VALUES"
                " ('run-first', 'spec-1', 'implement', 2, 'claude', 'succeeded', 0,"
                " '/logs/1', 'sess-1', 'box', '2026-01-01')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO hook_runs (graph_id, run_id, event, hook_index, hook_config,"
                " status, output, fire_key, started_at) VALUES ('graph-race0001',"
                " 'run-first', 'on_completed', 0, '{\"command\": \"true\"}', 'succeeded',"
                " 'ok', 'run-first:on_completed:settled:0', '2026-01-01')"
            )
        )
    engine.dispose()
    store = Store(db_url)
    usage = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,"
    usage += " turns, duration_ms, model"
    with store.transaction() as rows:
        node_runs = rows(
            "SELECT node, visit, platform, status, exit_code, log_path,"
            f" harness_session_id, host, {usage} FROM node_runs",
            {},
        )
        hook_runs = rows(
            f"SELECT event, status, output, fire_key, platform, {usage} FROM hook_runs", {}
        )
    store.close()
    nothing = (None,) * 8
    assert [tuple(row.values()) for row in node_runs] == [
        ("implement", 2, "claude", "succeeded", 0, "/logs/1", "sess-1", "box", *nothing)
    ]
    assert [tuple(row.values()) for row in hook_runs] == [
        ("on_completed", "succeeded", "ok", "run-first:on_completed:settled:0", None, *nothing)
    ]
