"""The schema of record, as SQLAlchemy tables: what alembic compares a database with.

The tables change only through alembic migrations (``canopy/store/migrations``), whose
environment hands these models to alembic (so ``alembic revision --autogenerate`` sees
what changed); a test checks that the migrated schema matches them. Nothing else imports
this module: Canopy reads and writes the tables in SQL through
:meth:`~canopy.store.engine.Store.transaction`. Execution state lives in Temporal; these
tables hold definitions and the readable record of what ran.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from canopy.statuses import ACTIVE_RUN_STATUSES

_ACTIVE_STATUS_LIST = ", ".join(f"'{status}'" for status in ACTIVE_RUN_STATUSES)
_ACTIVE_RUN = text(f"status IN ({_ACTIVE_STATUS_LIST})")
"""The rows of ``runs`` that own their graph: at most one per graph."""


class Base(DeclarativeBase):
    """Declarative base shared by every Canopy table."""


class Spec(Base):
    """A unit of work for an agent; standalone unless bound to a graph."""

    __tablename__ = "specs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(400))
    body: Mapped[str] = mapped_column(Text)
    workdir: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    status: Mapped[str] = mapped_column(String(32), default="pending")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_specs_workdir_status", "workdir", "status"),
        Index("ix_specs_status", "status"),
        Index("ix_specs_id_status", "id", "status"),
        Index("ix_specs_created_at_id", "created_at", "id"),
    )


class Queue(Base):
    """An ordered list of existing specs, decoupled from any one graph."""

    __tablename__ = "queues"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(400))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_queues_name", "name"),)


class QueueMember(Base):
    """One spec's place in one queue; ``position`` is dense and 0-based."""

    __tablename__ = "queue_members"

    queue_id: Mapped[str] = mapped_column(
        ForeignKey("queues.id", ondelete="CASCADE"), primary_key=True
    )
    spec_id: Mapped[str] = mapped_column(
        ForeignKey("specs.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer)
    group: Mapped[str | None] = mapped_column("group_name", String(200), nullable=True)

    __table_args__ = (
        Index("ix_queue_members_queue_position", "queue_id", "position"),
        Index("ix_queue_members_spec", "spec_id"),
    )


class Graph(Base):
    """A named pipeline of nodes; its definition fields are JSON documents."""

    __tablename__ = "graphs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(400))
    workdir: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    """The machine holding the workdir (its ``CANOPY_HOST``), where runs go by default;
    none: the machine that starts the run."""
    allow_dirty_start: Mapped[bool] = mapped_column(Boolean, default=False)
    lanes: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    """How many specs a run works on at once (docs/lanes.md); 1: one after another."""
    integration: Mapped[str] = mapped_column(String(16), default="rebase", server_default="rebase")
    """How a run of lanes lands a spec on the target: ``rebase`` or ``merge``."""
    conflict_resolver: Mapped[str | None] = mapped_column(String(200), nullable=True)
    """The node a run of lanes sends a conflicting spec to; none: the run pauses."""
    permissions: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """What its agents may do where a node, member or hook does not say; none: the
    platform's level from config.toml, else ``workspace``."""
    budget: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """What a run and each spec in it may spend (:mod:`canopy.budget`); none: no limit."""
    nodes: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    ensembles: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    hooks: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(32), default="idle")
    blocker: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_graphs_status", "status"), Index("ix_graphs_name", "name"))


class GraphSpec(Base):
    """A spec bound to a graph, in the graph's order."""

    __tablename__ = "graph_specs"

    graph_id: Mapped[str] = mapped_column(
        ForeignKey("graphs.id", ondelete="CASCADE"), primary_key=True
    )
    spec_id: Mapped[str] = mapped_column(ForeignKey("specs.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_graph_specs_spec", "spec_id"),)


class Run(Base):
    """One run of a graph over its bound specs or a queue: one Temporal workflow id (a chain
    of executions when it continues as new)."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    graph_id: Mapped[str] = mapped_column(ForeignKey("graphs.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    queue_id: Mapped[str | None] = mapped_column(
        ForeignKey("queues.id", ondelete="SET NULL"), nullable=True
    )
    workdir: Mapped[str] = mapped_column(String(4096))
    workflow_id: Mapped[str] = mapped_column(String(200))
    temporal_address: Mapped[str | None] = mapped_column(String(255), nullable=True)
    """The Temporal frontend the workflow was started on (none: recorded before this)."""
    status: Mapped[str] = mapped_column(String(32))
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    scheduled_resume_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    """Set while the run waits out a usage limit on a durable timer."""

    __table_args__ = (
        Index("ix_runs_graph_number", "graph_id", "number", unique=True),
        Index("ix_runs_status", "status"),
        Index("ix_runs_queue", "queue_id"),
        Index(
            "ix_runs_one_active_per_graph",
            "graph_id",
            unique=True,
            sqlite_where=_ACTIVE_RUN,
            postgresql_where=_ACTIVE_RUN,
        ),
    )
    """``ix_runs_one_active_per_graph`` is what makes two simultaneous starts of one graph
    impossible whatever the callers do: the second insert of an active run fails."""


class HarnessUsageColumns:
    """What a run's harness reported it used (the ledger behind ``canopy usage``): each
    column ``NULL`` when the harness did not say, never a guessed zero. Shared by node runs
    and hook runs, which record the same."""

    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Uncached input tokens."""
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cache_read_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cache_write_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """Only when the harness prices the run (Claude Code does)."""
    turns: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)


class NodeRun(HarnessUsageColumns, Base):
    """One launch of one node for one spec inside a run."""

    __tablename__ = "node_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    spec_id: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(200))
    visit: Mapped[int] = mapped_column(Integer, default=1)
    platform: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[str] = mapped_column(String(32))
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    log_path: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    harness_session_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    """The machine whose worker ran the node (``CANOPY_HOST``, else its host name)."""
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    """Why the node run did not succeed, when something said why (an activity error after
    its retries, a timeout, a usage limit, a stop)."""
    denial_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """How many permission denials the agent reported (``None``: not known)."""
    denials: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    """The first few denials, one line each (what was refused)."""
    launch_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    """The workflow execution and activity that recorded this node run: a retried
    ``start_node_run`` finds its row instead of recording the launch twice."""
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_node_runs_run", "run_id", "id"),
        Index("ix_node_runs_spec", "spec_id"),
        Index("ix_node_runs_launch_key", "launch_key", unique=True),
    )


class RunSpec(Base):
    """One spec's passage through one run: the history ``graph info`` rebuilds progress from."""

    __tablename__ = "run_specs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    spec_id: Mapped[str] = mapped_column(String(64))
    group: Mapped[str | None] = mapped_column("group_name", String(200), nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(32), nullable=True)
    ended_node: Mapped[str | None] = mapped_column(String(200), nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    worktree: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    """A run of lanes: the spec's worktree, while it exists."""
    branch: Mapped[str | None] = mapped_column(String(400), nullable=True)
    """A run of lanes: the spec's branch, while it exists (kept when it holds work)."""

    __table_args__ = (
        Index("ix_run_specs_run", "run_id", "id"),
        Index("ix_run_specs_spec", "spec_id", "run_id"),
    )


class HookRun(HarnessUsageColumns, Base):
    """One firing of one hook: what fired (an exact copy of its config), for which event
    and spec, and how it went. ``fire_key`` makes firing idempotent across retries."""

    __tablename__ = "hook_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    graph_id: Mapped[str] = mapped_column(ForeignKey("graphs.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), nullable=True
    )
    event: Mapped[str] = mapped_column(String(32))
    hook_index: Mapped[int] = mapped_column(Integer)
    hook_config: Mapped[dict[str, Any]] = mapped_column(JSON)
    platform: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """An agent hook's platform (none for command and interactive hooks)."""
    spec_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status: Mapped[str] = mapped_column(String(32))
    output: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    log_path: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    fire_key: Mapped[str] = mapped_column(String(400))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_hook_runs_graph", "graph_id", "id"),
        Index("ix_hook_runs_fire_key", "fire_key", unique=True),
    )


class InteractiveSession(Base):
    """A harness conversation Canopy drives turn by turn.

    ``status`` is ``live`` (open in Canopy: messages are delivered) or ``finished``
    (closed; resumable). ``harness_conversation_id`` is the harness's own id, learned
    from the first delivered turn or given when resuming a harness conversation.
    """

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(64))
    workdir: Mapped[str] = mapped_column(String(4096))
    host: Mapped[str] = mapped_column(String(255))
    """The machine holding the workdir: turns run on its agents task queue."""
    permissions: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """What its turns may do; none: the platform's level from config.toml, else
    ``workspace``."""
    harness_conversation_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    transcript_path: Mapped[str] = mapped_column(String(4096))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_sessions_status_name", "status", "name"),
        Index("ix_sessions_harness_conversation", "harness_conversation_id"),
    )


class Message(Base):
    """A prompt enqueued for a session: provenance as columns, then its delivery record.

    ``seq`` orders a session's messages (delivery is one at a time, oldest first).
    ``session_id`` is the session the message was addressed to (``None`` when a
    name-targeted hook matched no single live session); ``delivered_session_id`` the
    session that actually received it.
    """

    __tablename__ = "messages"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(64))
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(32))
    graph_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    event: Mapped[str | None] = mapped_column(String(32), nullable=True)
    target_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    hook_run_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    delivered_session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reply: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The harness's final reply to this turn (the transcript has it too)."""
    log_path: Mapped[str | None] = mapped_column(String(4096), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_messages_id", "id", unique=True),
        Index("ix_messages_session_status", "session_id", "status", "seq"),
        Index("ix_messages_status", "status"),
    )


class Notification(Base):
    """Something the user should read in the morning (``canopy notifications``)."""

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_notifications_created", "created_at", "id"),)


class Schedule(Base):
    """A cron-timed start of a graph's run: the Temporal Schedule (``temporal_id``) that
    fires it, and the outcome of its latest fire."""

    __tablename__ = "schedules"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    graph_id: Mapped[str] = mapped_column(ForeignKey("graphs.id", ondelete="CASCADE"))
    queue_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The queue each run drains (none: the graph's bound specs). No foreign key: a queue
    gone is a fire refused and recorded, not a schedule silently changed."""
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    """Where runs go when the graph names no host: the machine that made the schedule."""
    temporal_id: Mapped[str] = mapped_column(String(200))
    cron: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_fired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """``started``, ``skipped`` (the graph had an active run) or ``refused``."""
    last_line: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __table_args__ = (Index("ix_schedules_graph", "graph_id"),)
