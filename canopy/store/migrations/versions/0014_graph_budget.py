"""Budgets: what a graph's runs, and each spec in them, may spend before a run pauses.

A graph keeps its ``budget`` as the JSON it was given (``{"run": {"usd": 5}, "spec":
{"tokens": 200000}}``); ``NULL`` is no budget, which every graph stored before this
revision has. Only a column is added; nothing is lost.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.add_column(sa.Column("budget", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.drop_column("budget")
