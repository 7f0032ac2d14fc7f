"""Node runs record the host that ran them.

With workers on several machines, each graph's nodes run on the host that holds its
workdir (its ``canopy-agents@<host>`` task queue). ``node_runs.host`` says which machine
ran each node run, so ``graph info`` shows where to look for a process or a log. Node
runs recorded before this revision have no host (``NULL``); nothing is lost.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("node_runs") as batch:
        batch.add_column(sa.Column("host", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("node_runs") as batch:
        batch.drop_column("host")
