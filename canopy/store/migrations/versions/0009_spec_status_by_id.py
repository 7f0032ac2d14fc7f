"""Specs indexed by id and status together, for a graph run's next-spec read.

Before each spec a run reads the first pending member of its queue and counts the pending
ones. Both walk the queue's members and look up each member's spec status; with the status
in the index, the lookup never reads the spec's row (its body can be kilobytes): on a
10,000-member queue, half drained, the first pending member took 6.7 ms to find without
it and 1.7 ms with it, the count 8-19 ms and 3.4-4.1 ms (``bench/README.md``). Only an
index is added; nothing is lost.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_specs_id_status", "specs", ["id", "status"])


def downgrade() -> None:
    op.drop_index("ix_specs_id_status", table_name="specs")
