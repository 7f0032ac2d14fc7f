"""A graph may name a node that a run of lanes sends a conflicting spec to: its
``conflict_resolver``.

``graphs.conflict_resolver`` is ``NULL`` (none: a conflict pauses the run) for every
graph stored before this revision, as runs of lanes did; nothing is lost.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.add_column(sa.Column("conflict_resolver", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.drop_column("conflict_resolver")
