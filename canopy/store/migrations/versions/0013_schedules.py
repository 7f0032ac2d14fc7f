"""Schedules: cron-timed starts of a graph's run, one Temporal Schedule each.

Each row names the Temporal Schedule Canopy created for it, so ``graph delete`` can
delete a graph's schedules and ``schedule list`` can name their graphs without scanning
Temporal, and records the latest fire's outcome (a run started, a start skipped because
the graph was running, or refused) where ``schedule list`` shows it. A new table: nothing
earlier changes.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("graph_id", sa.String(length=64), nullable=False),
        sa.Column("queue_id", sa.String(length=64), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("temporal_id", sa.String(length=200), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_outcome", sa.String(length=16), nullable=True),
        sa.Column("last_line", sa.Text(), nullable=True),
        sa.Column("last_run_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_schedules_graph", "schedules", ["graph_id"])


def downgrade() -> None:
    op.drop_table("schedules")
