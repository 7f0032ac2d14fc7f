"""Each run records the Temporal address its workflow was started on.

A data dir whose commands come to talk to another server (a ``TEMPORAL_ADDRESS`` set or
changed, another data dir's ports) would steer, check or reset a run through a server
that does not know it, or worse, another instance's. With the address recorded, such a
command says so in one line naming both. Runs recorded before this revision have none
(``NULL``) and are steered as before; only a column is added, nothing is lost.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("temporal_address", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("temporal_address")
