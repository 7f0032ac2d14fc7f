"""A large backlog written straight through the store models, for the benchmarks.

Writing 10,000 specs through the CLI would take over an hour and measure nothing the
benchmarks are about; one transaction takes seconds.
"""

from collections.abc import Callable
from pathlib import Path

from canopy.backlog.specformat import SECTION_NAMES, render_tagged
from canopy.ids import new_id
from canopy.store.engine import Store
from canopy.store.models import InteractiveSession, Message, Queue, QueueMember, Spec
from canopy.timefmt import utcnow


def fill_queue(
    home: Path,
    count: int,
    queue_name: str,
    workdir_of: Callable[[int], str],
    status_of: Callable[[int], str] = lambda _: "pending",
) -> list[str]:
    """``count`` specs (all seven sections) in one queue, in order; their ids."""
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    now = utcnow()
    queue_id = new_id("queue")
    specs = [
        Spec(
            id=new_id("spec"),
            name=f"spec number {i}",
            body=render_tagged({name: f"{name} of spec {i}" for name in SECTION_NAMES}),
            workdir=workdir_of(i),
            status=status_of(i),
            created_at=now,
            updated_at=now,
        )
        for i in range(count)
    ]
    with store.transaction() as db:
        db.add(Queue(id=queue_id, name=queue_name, created_at=now))
        db.add_all(specs)
        db.flush()
        db.add_all(
            QueueMember(queue_id=queue_id, spec_id=spec.id, position=i)
            for i, spec in enumerate(specs)
        )
    store.close()
    return [spec.id for spec in specs]


def add_sessions(home: Path, count: int) -> None:
    """``count`` live interactive sessions, each with one queued message."""
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    now = utcnow()
    with store.transaction() as db:
        for i in range(count):
            session_id = new_id("sess")
            db.add(
                InteractiveSession(
                    id=session_id,
                    name=f"session-{i}",
                    platform="claude",
                    workdir=f"/src/project-{i % 10}",
                    host="bench",
                    status="live",
                    transcript_path=str(home / "sessions" / session_id / "transcript.jsonl"),
                    created_at=now,
                    updated_at=now,
                )
            )
            db.add(
                Message(
                    id=new_id("msg"),
                    session_id=session_id,
                    prompt=f"message {i}",
                    source="promptbuilder",
                    status="queued",
                    attempts=0,
                    created_at=now,
                )
            )
    store.close()
