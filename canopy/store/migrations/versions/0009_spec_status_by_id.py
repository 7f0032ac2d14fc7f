"""Specs indexed by id and status together, for a graph run's next-spec read.

Before each spec a run reads the first pending member of its queue and counts the pending
ones; both look up each member's spec status. A spec's status is stored after its body,
so without the index every lookup reads the whole row. With ``(id, status)`` in an index,
and the planner's statistics gathered (``ANALYZE``, here and at each run's start, see
``Store.refresh_statistics``), the read on a 10,000-member queue took 9-12 ms instead of
25-46 ms (``bench/read_ahead.py``). Without statistics SQLite's planner may pick a worse
plan with the index than without it, which is why they come together. Only an index is
added; nothing is lost.

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
    op.execute("ANALYZE")


def downgrade() -> None:
    op.drop_index("ix_specs_id_status", table_name="specs")
