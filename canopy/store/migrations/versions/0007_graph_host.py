"""A graph can name the host that holds its workdir.

With workers on several machines, a graph whose workdir lives on another machine would
need ``--host`` on every ``graph run``. ``graphs.host`` keeps that machine's name (its
``CANOPY_HOST``) with the graph; ``graph run`` uses it when no ``--host`` is given.
Graphs stored before this revision have no host (``NULL``: the machine that starts the
run, as before); nothing is lost.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.add_column(sa.Column("host", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("graphs") as batch:
        batch.drop_column("host")
