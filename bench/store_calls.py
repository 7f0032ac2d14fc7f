"""What each of a spec's store calls costs on a big queue half drained, and which SQL in it.

``GraphRunV2`` makes three store calls per spec of a one-node graph: the node activity's
``open_launch`` (guard, claim, node run) and ``record_node_end``, and the workflow's local
activity ``close_spec`` (close the passage, read the next spec). This drives N specs of a
scratch queue through those calls as a run would, then times M more, on a small queue
and on a big one: the median of each call, with and without the pending count
(``count_pending``), and the SQL statements by total time (timed around the store's
row runner).
A call that costs more on the big queue than on the small one is a cost that grows with
the queue: the per-spec share of a long drain that ``dispatch_overhead.py --drain``
measures as a whole.

    .venv/bin/python -m bench.store_calls --members 10000 --done 5000

See ``bench/README.md`` for what it showed.
"""

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bench.read_ahead import queue_run_store
from canopy.store.queries import Row, Rows

SMALL = (200, 100)
"""The small queue: members, specs done before the timed ones."""
TIMED = 30
STATEMENTS_SHOWN = 5


def drive(members: int, done: int) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """Median ms of each store call over :data:`TIMED` specs after ``done`` of a queue
    of ``members``, and the statements by mean ms per timed spec, biggest first."""
    from canopy.activities.bookkeeping import RunRecords
    from canopy.contracts.graph_run import NodeDispatch, NodeResult, ReadAhead, SpecClose
    from canopy.graphs.nodemodels import CommandNode

    store, graph, _ids = queue_run_store(members, "canopy-store-calls-")
    store.refresh_statistics()
    records = RunRecords(store)
    ahead = records.read_ahead(ReadAhead(run_id="run", graph_id=graph))
    timings: dict[str, list[float]] = defaultdict(list)
    statements: dict[str, float] = defaultdict(float)
    timing = False

    transaction = store.transaction

    @contextmanager
    def timed_transaction() -> Iterator[Rows]:
        with transaction() as rows:

            def run(sql: str, params: Mapping[str, Any]) -> list[Row]:
                begun = time.perf_counter()
                found = rows(sql, params)
                if timing:
                    statements[" ".join(sql.split())[:110]] += time.perf_counter() - begun
                return found

            yield run

    store.transaction = timed_transaction  # type: ignore[method-assign]

    def timed(name: str, call: Any, *args: Any) -> Any:
        begun = time.perf_counter()
        answer = call(*args)
        if timing:
            timings[name].append((time.perf_counter() - begun) * 1000)
        return answer

    for index in range(done + TIMED):
        timing = index >= done
        spec = ahead.spec
        assert spec is not None, "the queue ran out"
        dispatch = NodeDispatch(
            run_id="run",
            graph_id=graph,
            graph_name="g",
            spec_id=spec.spec_id,
            workdir="/nowhere",
            node=CommandNode(name="n", command="true"),
            launch_key=f"w/{index}",
            spec=spec,
            visit=1,
        )
        node_run = timed("open_launch", records.open_launch, dispatch, lambda _workdir: None)
        result = NodeResult(status="succeeded", exit_code=0, log_path="/nowhere/output.log")
        timed("record_node_end", records.record_node_end, node_run, result)
        close = SpecClose(
            run_id="run",
            graph_id=graph,
            spec=spec,
            outcome="completed",
            ended_node="n",
            read_ahead=True,
            count_pending=index % 2 == 0,
        )
        label = "close_spec, pending counted" if close.count_pending else "close_spec"
        ahead = timed(label, records.close_spec, close).ahead
    store.close()
    medians = {name: statistics.median(values) for name, values in timings.items()}
    ranked = sorted(((total / TIMED * 1000, sql) for sql, total in statements.items()))
    return medians, ranked[::-1][:STATEMENTS_SHOWN]


def main() -> None:
    """Drive both queues and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000, help="members of the big queue")
    parser.add_argument("--done", type=int, default=5_000, help="specs done before timing")
    options = parser.parse_args()
    if options.done + TIMED > options.members:
        parser.error(f"--done must leave {TIMED} specs to time")
    os.environ.setdefault("CANOPY_HOME", tempfile.mkdtemp(prefix="canopy-store-calls-home-"))
    small, _ = drive(*SMALL)
    big, statements = drive(options.members, options.done)
    print(f"ms per call, median of {TIMED} specs (the pending count on every other one)\n")
    print(
        f"| call | {SMALL[1]} of {SMALL[0]} done | {options.done:,} of {options.members:,} done |"
    )
    print("| --- | ---: | ---: |")
    for name in big:
        print(f"| `{name}` | {small[name]:.2f} | {big[name]:.2f} |")
    print(f"\nstatements on the big queue, ms per spec ({STATEMENTS_SHOWN} costliest)\n")
    print("| ms | statement |\n| ---: | --- |")
    for per_spec, sql in statements:
        print(f"| {per_spec:.2f} | `{sql}` |")


if __name__ == "__main__":
    main()
