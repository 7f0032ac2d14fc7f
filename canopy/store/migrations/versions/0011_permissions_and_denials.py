"""Permission levels on graphs and sessions; the denials a node run's agent met.

An agent CLI left to its defaults is refused every write and command, and often still
exits 0. Graphs and interactive sessions now say what their agents may do (``NULL``: the
nearer or farther setting decides, as before this revision), and each node run records
how many permission denials its agent reported and the first few, one line each
(``NULL``: not known, as for every run recorded before). Only columns are added; nothing
is lost.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("graphs", "sessions"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("permissions", sa.String(length=16), nullable=True))
    with op.batch_alter_table("node_runs") as batch:
        batch.add_column(sa.Column("denial_count", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("denials", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("node_runs") as batch:
        batch.drop_column("denials")
        batch.drop_column("denial_count")
    for table in ("sessions", "graphs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("permissions")
