"""What a graph run's next-spec read costs on a big queue, with and without the index.

Before each spec, ``GraphRunV2``'s local activity (``RunRecords.read_ahead``, also inside
``close_spec``) finds the first pending member of the run's queue and counts the pending
ones. This times that read on scratch SQLite stores whose queue has N members, with the
first 0, N/2 and N-10 of them completed: as the store is, with an ``(id, status)`` index
on specs added, and with that index plus the planner's statistics (``ANALYZE``); each
figure is also given as a multiple of the same read on a 200-member queue (as the store
is) measured in the same run.

    .venv/bin/python -m bench.read_ahead --members 10000 --repeat 50

See ``bench/README.md`` for what it showed.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from canopy.store.engine import Store

INDEX = "ix_specs_id_status"
SMALL_QUEUE = 200
BODY_BYTES = 2000
"""About the size of a real spec body: the index matters because the rows are wide."""


VARIANTS = ("as is", "index", "index + ANALYZE")


def queue_run_store(members: int, prefix: str) -> tuple["Store", str, list[str]]:
    """A scratch SQLite store holding a queue of ``members`` pending specs (bodies of
    :data:`BODY_BYTES`), a one-command-node graph and its running run ``run`` over the
    queue: the store, the graph's id and the specs' ids in queue order."""
    from canopy.ids import new_id
    from canopy.ops import graphs, queues
    from canopy.store.engine import Store
    from canopy.timefmt import utcnow

    home = Path(tempfile.mkdtemp(prefix=prefix))
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    queue = queues.queue_create(store, "q")["id"]
    graph = graphs.graph_create(
        store, {"name": "g", "workdir": str(home), "nodes": [{"name": "n", "command": "true"}]}
    )["id"]
    ids = [new_id("spec") for _ in range(members)]
    now = utcnow()
    with store.transaction() as rows:
        for index, spec_id in enumerate(ids):
            rows(
                "INSERT INTO specs (id, name, body, status, created_at, updated_at)"
                " VALUES (:id, :name, :body, 'pending', :now, :now)",
                {"id": spec_id, "name": f"s{index}", "body": "x" * BODY_BYTES, "now": now},
            )
            rows(
                "INSERT INTO queue_members (queue_id, spec_id, position)"
                " VALUES (:queue, :spec_id, :position)",
                {"queue": queue, "spec_id": spec_id, "position": index},
            )
        rows(
            "INSERT INTO runs (id, graph_id, queue_id, number, workdir, workflow_id, status,"
            " started_at) VALUES ('run', :graph, :queue, 1, :workdir, 'w', 'running', :now)",
            {"graph": graph, "queue": queue, "workdir": str(home), "now": now},
        )
    return store, graph, ids


def timed_reads(members: int, repeat: int, completed: list[int]) -> dict[tuple[int, str], float]:
    """Median ms of ``read_ahead`` per (members completed, variant of :data:`VARIANTS`)."""
    from canopy.activities.bookkeeping import RunRecords
    from canopy.contracts.graph_run import ReadAhead
    from canopy.store.queries import bound_list

    store, graph, ids = queue_run_store(members, "canopy-read-ahead-")
    records = RunRecords(store)
    request = ReadAhead(run_id="run", graph_id=graph)
    found: dict[tuple[int, str], float] = {}
    for done in completed:
        with store.transaction() as rows:
            rows("UPDATE specs SET status = 'pending'", {})
            if done:
                finished, params = bound_list("done", ids[:done])
                rows(f"UPDATE specs SET status = 'completed' WHERE id IN {finished}", params)
        for variant in VARIANTS:
            with store.transaction() as rows:
                rows(f"DROP INDEX IF EXISTS {INDEX}", {})
                rows("DROP TABLE IF EXISTS sqlite_stat1", {})
                if variant != "as is":
                    rows(f"CREATE INDEX {INDEX} ON specs (id, status)", {})
                if variant == "index + ANALYZE":
                    rows("ANALYZE", {})
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                records.read_ahead(request)
                times.append(time.perf_counter() - started)
            found[(done, variant)] = sorted(times)[len(times) // 2] * 1000
    store.close()
    return found


def main() -> None:
    """Time the reads and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000, help="members of the big queue")
    parser.add_argument("--repeat", type=int, default=50, help="reads per figure (median)")
    options = parser.parse_args()
    os.environ.setdefault("CANOPY_HOME", tempfile.mkdtemp(prefix="canopy-read-ahead-home-"))
    big = options.members
    small = timed_reads(SMALL_QUEUE, options.repeat, [SMALL_QUEUE // 2])
    unit = small[(SMALL_QUEUE // 2, VARIANTS[0])]
    found = timed_reads(big, options.repeat, [0, big // 2, big - 10])
    print(f"unit: read_ahead on a {SMALL_QUEUE}-member queue, half done, as is: {unit:.2f} ms")
    print("| members completed | " + " | ".join(f"{name}: ms (x unit)" for name in VARIANTS) + " |")
    print("| --- |" + " ---: |" * len(VARIANTS))
    for done in (0, big // 2, big - 10):
        cells = [
            f"{found[(done, name)]:.2f} ({found[(done, name)] / unit:.1f})" for name in VARIANTS
        ]
        print(f"| {done:,} of {big:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
