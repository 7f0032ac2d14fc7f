"""A spec's passage records the lane it ran in: its worktree and its branch.

``run_specs.worktree`` and ``run_specs.branch`` are set when a run of lanes claims the
spec, so ``graph info`` shows each lane's worktree while the spec is in flight; once the
lane is removed the worktree is cleared, and the branch stays named only when it was kept
because it held commits the target does not have. Passages recorded before this revision
ran in the graph's workdir and have neither (``NULL``); nothing is lost.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_specs") as batch:
        batch.add_column(sa.Column("worktree", sa.String(length=4096), nullable=True))
        batch.add_column(sa.Column("branch", sa.String(length=400), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_specs") as batch:
        batch.drop_column("branch")
        batch.drop_column("worktree")
