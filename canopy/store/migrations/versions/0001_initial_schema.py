"""Initial schema: specs, queues and members, graphs, runs, run specs, node runs.

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "graphs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=400), nullable=False),
        sa.Column("workdir", sa.String(length=4096), nullable=True),
        sa.Column("allow_dirty_start", sa.Boolean(), nullable=False),
        sa.Column("nodes", sa.JSON(), nullable=False),
        sa.Column("ensembles", sa.JSON(), nullable=False),
        sa.Column("hooks", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("blocker", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("graphs", schema=None) as batch_op:
        batch_op.create_index("ix_graphs_name", ["name"], unique=False)
        batch_op.create_index("ix_graphs_status", ["status"], unique=False)

    op.create_table(
        "queues",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=400), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.create_index("ix_queues_name", ["name"], unique=False)

    op.create_table(
        "specs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=400), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("workdir", sa.String(length=4096), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("specs", schema=None) as batch_op:
        batch_op.create_index("ix_specs_created_at_id", ["created_at", "id"], unique=False)
        batch_op.create_index("ix_specs_status", ["status"], unique=False)
        batch_op.create_index("ix_specs_workdir_status", ["workdir", "status"], unique=False)

    op.create_table(
        "graph_specs",
        sa.Column("graph_id", sa.String(length=64), nullable=False),
        sa.Column("spec_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["spec_id"],
            ["specs.id"],
        ),
        sa.PrimaryKeyConstraint("graph_id", "spec_id"),
    )
    with op.batch_alter_table("graph_specs", schema=None) as batch_op:
        batch_op.create_index("ix_graph_specs_spec", ["spec_id"], unique=False)

    op.create_table(
        "queue_members",
        sa.Column("queue_id", sa.String(length=64), nullable=False),
        sa.Column("spec_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("group_name", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(["queue_id"], ["queues.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["spec_id"], ["specs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("queue_id", "spec_id"),
    )
    with op.batch_alter_table("queue_members", schema=None) as batch_op:
        batch_op.create_index(
            "ix_queue_members_queue_position", ["queue_id", "position"], unique=False
        )
        batch_op.create_index("ix_queue_members_spec", ["spec_id"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("graph_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.String(length=64), nullable=True),
        sa.Column("workdir", sa.String(length=4096), nullable=False),
        sa.Column("workflow_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["queue_id"], ["queues.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_graph_number", ["graph_id", "number"], unique=True)
        batch_op.create_index("ix_runs_queue", ["queue_id"], unique=False)
        batch_op.create_index("ix_runs_status", ["status"], unique=False)

    op.create_table(
        "node_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("spec_id", sa.String(length=64), nullable=False),
        sa.Column("node", sa.String(length=200), nullable=False),
        sa.Column("visit", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("log_path", sa.String(length=4096), nullable=True),
        sa.Column("harness_session_id", sa.String(length=200), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_runs", schema=None) as batch_op:
        batch_op.create_index("ix_node_runs_run", ["run_id", "id"], unique=False)
        batch_op.create_index("ix_node_runs_spec", ["spec_id"], unique=False)

    op.create_table(
        "run_specs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("spec_id", sa.String(length=64), nullable=False),
        sa.Column("group_name", sa.String(length=200), nullable=True),
        sa.Column("outcome", sa.String(length=32), nullable=True),
        sa.Column("ended_node", sa.String(length=200), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("run_specs", schema=None) as batch_op:
        batch_op.create_index("ix_run_specs_run", ["run_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("run_specs", schema=None) as batch_op:
        batch_op.drop_index("ix_run_specs_run")

    op.drop_table("run_specs")
    with op.batch_alter_table("node_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_node_runs_spec")
        batch_op.drop_index("ix_node_runs_run")

    op.drop_table("node_runs")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_status")
        batch_op.drop_index("ix_runs_queue")
        batch_op.drop_index("ix_runs_graph_number")

    op.drop_table("runs")
    with op.batch_alter_table("queue_members", schema=None) as batch_op:
        batch_op.drop_index("ix_queue_members_spec")
        batch_op.drop_index("ix_queue_members_queue_position")

    op.drop_table("queue_members")
    with op.batch_alter_table("graph_specs", schema=None) as batch_op:
        batch_op.drop_index("ix_graph_specs_spec")

    op.drop_table("graph_specs")
    with op.batch_alter_table("specs", schema=None) as batch_op:
        batch_op.drop_index("ix_specs_workdir_status")
        batch_op.drop_index("ix_specs_status")
        batch_op.drop_index("ix_specs_created_at_id")

    op.drop_table("specs")
    with op.batch_alter_table("queues", schema=None) as batch_op:
        batch_op.drop_index("ix_queues_name")

    op.drop_table("queues")
    with op.batch_alter_table("graphs", schema=None) as batch_op:
        batch_op.drop_index("ix_graphs_status")
        batch_op.drop_index("ix_graphs_name")

    op.drop_table("graphs")
