"""Node runs and hook runs record what their harness reported it used.

The cost and usage ledger: tokens (input, output, cache reads and writes), cost in USD,
turns, duration and model, as each harness reports them, on every node run and hook run.
Hook runs also record their platform, so ``canopy usage`` can sum them by platform as it
does node runs. Rows recorded before this revision have none of it (``NULL``: unknown, not
zero); nothing is lost.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

USAGE_COLUMNS = (
    ("input_tokens", sa.Integer),
    ("output_tokens", sa.Integer),
    ("cache_read_tokens", sa.Integer),
    ("cache_write_tokens", sa.Integer),
    ("cost_usd", sa.Float),
    ("turns", sa.Integer),
    ("duration_ms", sa.Integer),
)


def upgrade() -> None:
    with op.batch_alter_table("hook_runs") as batch:
        batch.add_column(sa.Column("platform", sa.String(length=64), nullable=True))
    for table in ("node_runs", "hook_runs"):
        with op.batch_alter_table(table) as batch:
            for name, kind in USAGE_COLUMNS:
                batch.add_column(sa.Column(name, kind(), nullable=True))
            batch.add_column(sa.Column("model", sa.String(length=200), nullable=True))


def downgrade() -> None:
    for table in ("node_runs", "hook_runs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("model")
            for name, _ in reversed(USAGE_COLUMNS):
                batch.drop_column(name)
    with op.batch_alter_table("hook_runs") as batch:
        batch.drop_column("platform")
