"""One active run per graph, enforced by a partial unique index; node runs record errors.

Before this revision two simultaneous ``graph run`` calls could both record an active run
of one graph. The index makes that impossible, so a database that already holds such a
pair is repaired first: for each graph, every active run but the newest ends as ``reset``
(the same end ``graph reset`` gives a run whose workflow is gone).

``node_runs.error`` keeps why a node run failed (an activity error after its retries, a
timeout, a usage limit), which was only in the worker's log before. ``node_runs.launch_key``
(unique) names the workflow execution and activity that recorded a node run, so a retried
record of one launch finds its row instead of adding a second.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ACTIVE = "status IN ('running', 'paused')"
"""The active run statuses as of this revision (``canopy.statuses.ACTIVE_RUN_STATUSES``)."""


def upgrade() -> None:
    op.get_bind().execute(
        sa.text(
            "UPDATE runs SET status = 'reset', ended_at = CURRENT_TIMESTAMP, "
            f"scheduled_resume_at = NULL WHERE {ACTIVE} AND EXISTS (SELECT 1 FROM runs newer "
            "WHERE newer.graph_id = runs.graph_id AND newer.number > runs.number "
            f"AND newer.{ACTIVE})"
        )
    )
    op.create_index(
        "ix_runs_one_active_per_graph",
        "runs",
        ["graph_id"],
        unique=True,
        sqlite_where=sa.text(ACTIVE),
        postgresql_where=sa.text(ACTIVE),
    )
    with op.batch_alter_table("node_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("launch_key", sa.String(length=200), nullable=True))
        batch_op.create_index("ix_node_runs_launch_key", ["launch_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("node_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_node_runs_launch_key")
        batch_op.drop_column("launch_key")
        batch_op.drop_column("error")
    op.drop_index("ix_runs_one_active_per_graph", table_name="runs")
