"""The run's current details in the Temporal UI, as markdown: what it is doing, or why it
is not, and how to get it going again.

Pure functions of their inputs (no I/O, no clock), so the workflow may call them.
"""

from datetime import datetime

from canopy.contracts.graph_run import IgnoredSignalRecord, LaneStatus, NextSpec, RunCounts
from canopy.contracts.graph_run_blocker import (
    Blocker,
    DirtyTree,
    MergeConflict,
    ways_out,
)
from canopy.markdown import code_span


def _clock(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def progress(counts: RunCounts, pending: int | None) -> str:
    """``spec 3 of 10 · 1 completed, 1 failed, 0 skipped`` (the total when known), and
    what the run used so far."""
    current = counts.specs_started + 1
    of = f" of {counts.specs_started + pending}" if pending is not None else ""
    return (
        f"spec {current}{of} · {counts.completed} completed, {counts.failed} failed, "
        f"{counts.skipped} skipped{denied(counts)}{used(counts)}"
    )


def denied(counts: RunCounts) -> str:
    """``\n\n**2 permission denials** so far (latest: `Bash: npm test`)``, or nothing."""
    if not counts.denials:
        return ""
    plural = "s" if counts.denials != 1 else ""
    shown = (counts.last_denial or "").replace("`", "'")
    latest = f" (latest: `{shown}`)" if shown else ""
    return f"\n\n**{counts.denials} permission denial{plural}** so far{latest}"


def used(counts: RunCounts) -> str:
    """``\n\nUsed so far: 1,200 input, 340 output, 5,000 cache read tokens · $0.2500``:
    the running total of what the run's harnesses reported (nothing before any did)."""
    usage = counts.usage
    if usage is None:
        return ""
    tokens = [
        f"{count:,} {what}"
        for count, what in zip(
            usage.tokens(), ("input", "output", "cache read", "cache write"), strict=True
        )
        if count is not None
    ]
    parts = [", ".join(tokens) + " tokens"] if tokens else []
    if usage.cost_usd is not None:
        parts.append(f"${usage.cost_usd:.4f}")
    return f"\n\nUsed so far: {' · '.join(parts)}" if parts else ""


def running(
    spec: NextSpec, node: str | None, since: datetime, counts: RunCounts, pending: int | None
) -> str:
    """A spec (and a node) in progress."""
    at = f" · node `{node}`" if node else ""
    return (
        f"**Running** spec **{spec.name}** (`{spec.spec_id}`){at} since {_clock(since)}\n\n"
        f"{progress(counts, pending)}"
    )


def lanes(flying: list[LaneStatus], capacity: int, counts: RunCounts, pending: int | None) -> str:
    """``3 of 4 lanes busy``, then each spec in flight: its node and since when (or what
    it waits for), and its worktree."""
    lines = []
    for lane in flying:
        doing = f"node `{lane.node}`" if lane.node else lane.state
        where = f" · {code_span(lane.worktree)}" if lane.worktree else ""
        lines.append(
            f"- **{lane.spec_name}** (`{lane.spec_id}`) · {doing} since {_clock(lane.since)}{where}"
        )
    head = f"**Running** · {len(flying)} of {capacity} lanes busy"
    parts = [f"{head}:", "\n".join(lines)] if lines else [head]
    return "\n\n".join([*parts, progress(counts, pending)])


def blocked(blocker: Blocker) -> str:
    """A paused run: the blocker, its dirty paths, and its ways out as commands."""
    lines = [f"**Paused** ({blocker.kind}): {blocker.message}"]
    if isinstance(blocker, DirtyTree) and blocker.dirty_paths:
        dirty = blocker.dirty_paths
        more = blocker.dirty_count - len(dirty)
        listed = "\n".join(f"- {code_span(path)}" for path in dirty)
        lines.append(f"Dirty paths:\n{listed}" + (f"\n- … and {more} more" if more > 0 else ""))
    if isinstance(blocker, MergeConflict) and blocker.conflict_paths:
        conflicts = blocker.conflict_paths
        more = blocker.conflict_count - len(conflicts)
        listed = "\n".join(f"- {code_span(path)}" for path in conflicts)
        tail = f"\n- … and {more} more" if more > 0 else ""
        lines.append(f"Conflicting paths:\n{listed}{tail}")
    ways = ways_out(blocker)
    if ways:
        lines.append("Ways out:\n" + "\n".join(f"- {way}" for way in ways))
    return "\n\n".join(lines)


def usage_limit(resume_at: datetime, counts: RunCounts, limit: str | None = None) -> str:
    """A run waiting out a usage limit on a durable timer, with the harness's message and
    the reset chosen from it when known."""
    said = f"\n\n{limit}" if limit else ""
    return (
        f"**Waiting for a usage limit** to reset: resumes at {_clock(resume_at)} by itself "
        f"(`canopy graph stop` ends the wait){said}\n\n{progress(counts, None)}"
    )


def ignored(record: IgnoredSignalRecord) -> str:
    """``\n\nignored signal continue_run at 2026-12-04T09:12:03Z: …``: the last signal the
    run did not act on, under whatever else the details say."""
    at = record.at.strftime("%Y-%m-%dT%H:%M:%SZ")  # workflow.now() is UTC
    return f"\n\nignored signal {record.signal} at {at}: {record.reason}"


def settled(status: str, counts: RunCounts, blocker: Blocker | None) -> str:
    """A run that has ended."""
    done = f"{counts.completed} completed, {counts.failed} failed, {counts.skipped} skipped"
    why = f"\n\n{blocker.message}" if blocker else ""
    return f"**Settled {status}** · {done}{why}{denied(counts)}{used(counts)}"
