"""A graph says how many specs a run of it works on at once: its lanes.

``graphs.lanes`` is 1 for every graph stored before this revision (the server default
fills it in), which is the sequential drain those graphs have always had; nothing is
lost.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.add_column(sa.Column("lanes", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.drop_column("lanes")
