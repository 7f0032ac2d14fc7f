"""A graph says how a run of lanes lands a spec's work on the target: ``rebase`` (the
branch rebased onto the target's tip and fast-forwarded) or ``merge`` (a merge commit).

``graphs.integration`` is ``rebase`` for every graph stored before this revision (the
server default fills it in), which is what runs of lanes did; nothing is lost.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.add_column(
            sa.Column("integration", sa.String(length=16), nullable=False, server_default="rebase")
        )


def downgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.drop_column("integration")
