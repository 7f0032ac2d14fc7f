"""Hook runs; a legacy ``on_completed`` column becomes a hook on the on_completed event.

Databases of earlier Canopy versions stored one completion hook per graph in an
``on_completed`` column. Where that column exists, each graph's value is appended to its
``hooks["on_completed"]`` list — unchanged, so nothing the user configured is lost — and
the column is dropped. Databases without it are untouched.

Revision ID: 0003
Revises: 0002
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hook_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("graph_id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("hook_index", sa.Integer(), nullable=False),
        sa.Column("hook_config", sa.JSON(), nullable=False),
        sa.Column("spec_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("log_path", sa.String(length=4096), nullable=True),
        sa.Column("fire_key", sa.String(length=400), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_hook_runs_graph", "hook_runs", ["graph_id", "id"], unique=False)
    op.create_index("ix_hook_runs_fire_key", "hook_runs", ["fire_key"], unique=True)
    _fold_legacy_on_completed()


def _fold_legacy_on_completed() -> None:
    """Move each graph's legacy ``on_completed`` value into ``hooks``, then drop it."""
    connection = op.get_bind()
    columns = {column["name"] for column in sa.inspect(connection).get_columns("graphs")}
    if "on_completed" not in columns:
        return
    rows = connection.execute(
        sa.text("SELECT id, hooks, on_completed FROM graphs WHERE on_completed IS NOT NULL")
    ).all()
    for graph_id, hooks, legacy in rows:
        merged = _merged_hooks(_as_json(hooks) or {}, _as_json(legacy))
        connection.execute(
            sa.text("UPDATE graphs SET hooks = :hooks WHERE id = :id"),
            {"hooks": json.dumps(merged), "id": graph_id},
        )
    with op.batch_alter_table("graphs", schema=None) as batch_op:
        batch_op.drop_column("on_completed")


def _as_json(value: Any) -> Any:
    """Driver values arrive as JSON text (SQLite) or already decoded (Postgres JSON)."""
    return json.loads(value) if isinstance(value, str) else value


def _merged_hooks(hooks: dict[str, Any], legacy: Any) -> dict[str, Any]:
    """``hooks`` with the legacy hook (or hooks, if it held a list) appended to
    ``on_completed``, keeping hooks already registered there first."""
    added = legacy if isinstance(legacy, list) else [legacy]
    return {**hooks, "on_completed": [*hooks.get("on_completed", []), *added]}


def downgrade() -> None:
    op.drop_index("ix_hook_runs_fire_key", table_name="hook_runs")
    op.drop_index("ix_hook_runs_graph", table_name="hook_runs")
    op.drop_table("hook_runs")
