"""Migrations are the only way the schema changes, and they match the models."""

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
