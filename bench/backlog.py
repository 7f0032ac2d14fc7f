"""A large backlog written straight into the store, for the benchmarks.

Writing 10,000 specs through the CLI would take over an hour and measure nothing the
benchmarks are about; one transaction takes seconds.
"""

from collections.abc import Callable
from pathlib import Path

from canopy.backlog.specformat import SECTION_NAMES, render_tagged
from canopy.ids import new_id
from canopy.store.engine import Store
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
    ids = [new_id("spec") for _ in range(count)]
    with store.transaction() as rows:
        rows(
            "INSERT INTO queues (id, name, created_at) VALUES (:id, :name, :now)",
            {"id": queue_id, "name": queue_name, "now": now},
        )
        for i, spec_id in enumerate(ids):
            rows(
                "INSERT INTO specs (id, name, body, workdir, status, created_at, updated_at)"
                " VALUES (:id, :name, :body, :workdir, :status, :now, :now)",
                {
                    "id": spec_id,
                    "name": f"spec number {i}",
                    "body": render_tagged({name: f"{name} of spec {i}" for name in SECTION_NAMES}),
                    "workdir": workdir_of(i),
                    "status": status_of(i),
                    "now": now,
                },
            )
            rows(
                "INSERT INTO queue_members (queue_id, spec_id, position)"
                " VALUES (:queue_id, :spec_id, :position)",
                {"queue_id": queue_id, "spec_id": spec_id, "position": i},
            )
    store.close()
    return ids


def add_sessions(home: Path, count: int) -> None:
    """``count`` live interactive sessions, each with one queued message."""
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    now = utcnow()
    with store.transaction() as rows:
        for i in range(count):
            session_id = new_id("sess")
            rows(
                "INSERT INTO sessions (id, name, platform, workdir, host, status,"
                " transcript_path, created_at, updated_at) VALUES (:id, :name, 'claude',"
                " :workdir, 'bench', 'live', :transcript_path, :now, :now)",
                {
                    "id": session_id,
                    "name": f"session-{i}",
                    "workdir": f"/src/project-{i % 10}",
                    "transcript_path": str(home / "sessions" / session_id / "transcript.jsonl"),
                    "now": now,
                },
            )
            rows(
                "INSERT INTO messages (id, session_id, prompt, source, status, attempts,"
                " created_at) VALUES (:id, :session_id, :prompt, 'promptbuilder', 'queued', 0,"
                " :now)",
                {
                    "id": new_id("msg"),
                    "session_id": session_id,
                    "prompt": f"message {i}",
                    "now": now,
                },
            )
    store.close()
