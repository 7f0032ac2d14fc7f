"""Migrations are the only way the schema changes, and they match the models."""

import json
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from canopy.store.engine import MIGRATIONS_DIR, Store, current_revision
from canopy.store.models import Base
from canopy.store.schema_version import HEAD_REVISION

pytestmark = pytest.mark.store


def test_head_revision_constant_matches_the_migrations() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_heads() == [HEAD_REVISION]


def test_migrated_schema_matches_the_models(store: Store) -> None:
    assert current_revision(store.engine) == HEAD_REVISION
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_opening_a_migrated_store_again_is_a_no_op(db_url: str) -> None:
    Store(db_url).close()
    reopened = Store(db_url)
    assert current_revision(reopened.engine) == HEAD_REVISION
    reopened.close()


def test_sqlite_store_uses_wal_and_foreign_keys(tmp_path: object) -> None:
    store = Store(f"sqlite:///{tmp_path}/c.db")
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    store.close()


def test_a_legacy_on_completed_column_becomes_an_on_completed_hook(db_url: str) -> None:
    """A database from before event-keyed hooks keeps its completion hook, unattended."""
    from alembic import command
    from sqlalchemy import inspect, text

    from canopy.store.engine import make_engine

    engine = make_engine(db_url)
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
    with store.engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("graphs")}
        rows = connection.execute(text("SELECT id, hooks FROM graphs ORDER BY id")).all()
        hooks: dict[str, Any] = {str(graph_id): value for graph_id, value in rows}
    store.close()
    assert "on_completed" not in columns
    decoded = {k: json.loads(v) if isinstance(v, str) else v for k, v in hooks.items()}
    prompt = {"platform": "claude", "prompt": "Update docs for {{completed_specs}}"}
    assert decoded["graph-legacy0001"] == {"on_completed": [prompt]}
    assert decoded["graph-legacy0002"] == {"on_completed": [{"command": "notify.sh"}, prompt]}
    assert decoded["graph-legacy0003"] == {}
