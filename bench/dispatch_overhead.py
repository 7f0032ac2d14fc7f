"""Per-spec orchestration overhead of a graph run, against a bare shell loop doing the work.

Usage: ``make bench-dispatch`` or ``.venv/bin/python bench/dispatch_overhead.py
[--specs N | --drain N] [--keep]``.

In a scratch ``CANOPY_HOME`` with free ports it runs ``canopy up`` (embedded Temporal dev
server plus worker), makes a one-commit git repo, N specs in one queue and a graph with a
single command node running ``true`` in that repo, then times ``canopy graph run G --queue
Q`` + ``canopy graph wait G`` (run start to settled). The baseline, measured in the same
run before and after the engine (so background load hits both alike), is a bash loop that
per spec runs the same command the node runs (``/bin/sh -c true``) and ``git status
--porcelain`` in the same repo: the work a dispatcher cannot avoid. The difference per spec
is what Temporal round trips, store bookkeeping and log files cost.

``--drain N`` is the scale run: the same measurement over a big queue (default 10,000),
reported as throughput, the worker's peak memory (``VmHWM``) and the largest history of
any execution in the run's continue-as-new chain, which must stay bounded. Both modes
print both tables; ``--specs`` leads with the overhead, ``--drain`` with the drain figures.
Progress goes to stderr, results to stdout as markdown.

The CLI and the worker run from a copy of the engine's sources taken at start (see
:func:`snapshot_engine`), so concurrent edits to the checkout do not leak into a run.
"""

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.backlog import fill_queue
from tests.daemons import free_ports

CANOPY = str(Path(sys.executable).parent / "canopy")
REPO_ROOT = Path(__file__).resolve().parent.parent
ENGINE_SOURCES = ("canopy",)
"""What :func:`snapshot_engine` copies: every module the CLI and the worker import (the
package's links to cli/, workflows/, activities/ and worker.py are copied as files)."""
GRAPH_NAME = "bench-noop"
QUEUE_NAME = "bench-queue"
NODE_COMMAND = "true"
DEFAULT_SPECS_PER_EXECUTION = 100
"""GraphRun's default (``RunInput.specs_per_execution``), unless the env overrides it."""
PROGRESS_EVERY_SECONDS = 10.0
STALL_SECONDS = 180.0
GIT_IDENTITY = ["-c", "user.name=canopy bench", "-c", "user.email=bench@example.invalid"]


@dataclass(frozen=True)
class Scratch:
    """Where one benchmark lives: data dir, git repo, ports and the CLI's environment."""

    root: Path
    home: Path
    repo: Path
    port: int
    ui_port: int
    env: dict[str, str]

    @property
    def address(self) -> str:
        """The embedded server's frontend, as ``canopy up`` binds it."""
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class EngineRun:
    """One timed ``graph run`` + ``graph wait`` and what the run record says about it."""

    seconds: float
    settled: str
    workflow_id: str
    record_seconds: float | None


@dataclass(frozen=True)
class Memory:
    """A process's peak and current resident set, in KiB (``/proc/<pid>/status``)."""

    peak_kib: int
    rss_kib: int


@dataclass
class Phase:
    """Time spent between consecutive history events of one kind, and how often."""

    seconds: float = 0.0
    count: int = 0


@dataclass(frozen=True)
class Chain:
    """The executions of a run's continue-as-new chain and their history lengths."""

    lengths: list[int]
    statuses: list[str]
    largest_counted: int
    """Events of the largest execution counted one by one (``fetch_history``): a cross-check
    of ``describe()``'s figure."""
    phases: dict[str, Phase]
    """Time of the largest execution spent in each step between consecutive events."""
    phase_specs: int
    """Specs the largest execution worked on (its ``begin_spec`` activities)."""


@dataclass(frozen=True)
class Results:
    """Everything one benchmark measured."""

    count: int
    baselines: list[float]
    engine: EngineRun
    idle_worker: Memory
    worker: Memory
    server: Memory | None
    chain: Chain
    spec_statuses: dict[str, int]
    cpu: dict[str, float]
    """CPU seconds the worker and the dev server used during the engine run."""

    @property
    def baseline(self) -> float:
        """Mean of the baseline runs bracketing the engine run."""
        return sum(self.baselines) / len(self.baselines)


# --- scratch setup ------------------------------------------------------------------------


def make_scratch(root: Path) -> Scratch:
    """Data dir and repo side by side (the data dir must not make the tree dirty), and a
    frozen copy of the engine that every CLI call and the worker import."""
    home, repo = root / "home", root / "repo"
    home.mkdir()
    repo.mkdir()
    port, ui_port = free_ports(2)
    engine = snapshot_engine(root / "engine")
    env = {**os.environ, "CANOPY_HOME": str(home)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(engine), env.get("PYTHONPATH")]))
    for variable in ("CANOPY_DB_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"):
        env.pop(variable, None)  # the bench owns its server and its SQLite store
    check_snapshot(engine, env)
    return Scratch(root, home, repo, port, ui_port, env)


def snapshot_engine(target: Path) -> Path:
    """Copy the engine's sources, so edits landing in the checkout cannot change it mid-run.

    The worker's workflow sandbox re-reads workflow modules from disk whenever it builds a
    workflow instance (every continue-as-new, every cache eviction), and imports modules
    it has not seen yet lazily; in a shared checkout a long drain would otherwise end up
    running new workflow code against the activities and models it loaded at start.
    """
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    target.mkdir()
    for name in ENGINE_SOURCES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def check_snapshot(engine: Path, env: dict[str, str]) -> None:
    """Refuse a snapshot taken mid-edit (it does not import) or one that is not used."""
    probe = "import canopy.worker, canopy.cli.main; print(canopy.worker.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        cwd=engine.parent,  # like the worker, whose cwd is the data dir: no checkout on path
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"the engine snapshot does not import (mid-edit?): {last}")
    if not done.stdout.strip().startswith(str(engine)):
        raise RuntimeError(f"the worker would not run from the snapshot: {done.stdout.strip()}")


def make_repo(repo: Path) -> None:
    """A git repo with one commit and a clean tree, as the launch guard requires."""
    (repo / "README.md").write_text("dispatch overhead bench\n")
    for argv in (
        ["git", "-c", "init.defaultBranch=main", "init", "-q"],
        ["git", "add", "README.md"],
        ["git", *GIT_IDENTITY, "commit", "-q", "-m", "initial"],
    ):
        subprocess.run(argv, cwd=repo, check=True)


def create_graph(scratch: Scratch) -> None:
    """The one-node graph, through the CLI so the definition is validated like a user's."""
    definition = {
        "name": GRAPH_NAME,
        "workdir": str(scratch.repo),
        "nodes": [{"name": "noop", "command": NODE_COMMAND}],
    }
    path = scratch.root / "graph.json"
    path.write_text(json.dumps(definition))
    canopy_json(scratch, "graph", "create", "--file", str(path))


# --- the CLI and the daemons ----------------------------------------------------------------


def canopy_json(scratch: Scratch, *args: str) -> Any:
    """Run ``canopy ARGS --json`` in the scratch home; its parsed stdout."""
    done = subprocess.run(
        [CANOPY, *args, "--json"], env=scratch.env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"canopy {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


@contextmanager
def daemons_up(scratch: Scratch) -> Iterator[None]:
    """``canopy up`` on free ports; ``canopy down`` on the way out, whatever happened."""
    try:
        canopy_json(scratch, "up", "--port", str(scratch.port), "--ui-port", str(scratch.ui_port))
        yield
    finally:
        stop_daemons(scratch)


def stop_daemons(scratch: Scratch) -> None:
    """``canopy down``; if that fails, SIGKILL the exact pids it recorded for this home."""
    done = subprocess.run(
        [CANOPY, "down", "--json"], env=scratch.env, capture_output=True, text=True, check=False
    )
    if done.returncode == 0:
        return
    print(f"canopy down failed ({done.stderr.strip()}); killing recorded pids", file=sys.stderr)
    for pid in recorded_pids(scratch.home):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def recorded_pids(home: Path) -> list[int]:
    """The worker and server pids ``canopy up`` recorded in ``home`` (ours alone)."""
    pids = []
    if (home / "worker.pid").exists():
        pids.append(int((home / "worker.pid").read_text()))
    if (home / "server.json").exists():
        pids.append(int(json.loads((home / "server.json").read_text())["pid"]))
    return pids


def memory_of(pid: int) -> Memory:
    """Peak (``VmHWM``) and current (``VmRSS``) resident memory of ``pid``."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            fields[name] = int(value.split()[0])
    return Memory(peak_kib=fields["VmHWM"], rss_kib=fields["VmRSS"])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` has used so far (``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ", field 3 is index 0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_cpu(home: Path) -> dict[str, float]:
    """CPU seconds used so far by the worker and the dev server of ``home``."""
    pids = {"worker": int((home / "worker.pid").read_text())}
    record = home / "server.json"
    if record.exists():
        pids["dev server"] = int(json.loads(record.read_text())["pid"])
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def worker_memory(home: Path) -> Memory:
    """The background worker's memory (its pid is in ``worker.pid``)."""
    return memory_of(int((home / "worker.pid").read_text()))


def server_memory(home: Path) -> Memory | None:
    """The dev server's memory, when its record is there (context for the worker figure)."""
    record = home / "server.json"
    if not record.exists():
        return None
    return memory_of(int(json.loads(record.read_text())["pid"]))


# --- measuring ------------------------------------------------------------------------------


def baseline_seconds(repo: Path, count: int) -> float:
    """A bash loop doing per spec what the node does (``/bin/sh -c true``, exactly how the
    command node runs it) plus ``git status --porcelain``: the unavoidable per-spec work."""
    loop = (
        f"for i in $(seq {count}); do /bin/sh -c {NODE_COMMAND}; "
        "git status --porcelain >/dev/null; done"
    )
    started = time.perf_counter()
    subprocess.run(["bash", "-c", loop], cwd=repo, check=True)
    return time.perf_counter() - started


def spec_statuses(home: Path) -> dict[str, int]:
    """Specs per status, read with stdlib sqlite3 (WAL: never blocks the worker's writes)."""
    connection = sqlite3.connect(f"file:{home / 'canopy.db'}?mode=ro", uri=True, timeout=10)
    try:
        rows = connection.execute("SELECT status, COUNT(*) FROM specs GROUP BY status").fetchall()
    finally:
        connection.close()
    return {str(status): int(number) for status, number in rows}


def wait_with_progress(scratch: Scratch, count: int, started: float) -> str:
    """``canopy graph wait``, reporting progress on stderr while it blocks, and giving up
    early when no spec has finished for ``STALL_SECONDS`` (a no-op node never takes that
    long, so a stall means a broken worker, not a slow one)."""
    waiting = subprocess.Popen(
        [CANOPY, "graph", "wait", GRAPH_NAME, "--timeout", str(count * 10 + 600), "--json"],
        env=scratch.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        last_report = last_change = time.perf_counter()
        finished = 0
        while waiting.poll() is None:
            time.sleep(0.1)
            now = time.perf_counter()
            if now - last_report >= PROGRESS_EVERY_SECONDS:
                last_report = now
                done = report_progress(scratch.home, count, now - started)
                if done != finished:
                    finished, last_change = done, now
                elif now - last_change > STALL_SECONDS:
                    raise RuntimeError(stall_message(scratch.home, finished))
        output = waiting.stdout.read() if waiting.stdout else ""
    finally:
        if waiting.poll() is None:
            waiting.kill()
        waiting.wait()
    if waiting.returncode != 0:
        raise RuntimeError(f"canopy graph wait exited {waiting.returncode}")
    return str(json.loads(output)["status"])


def stall_message(home: Path, finished: int) -> str:
    """Why the bench gave up: the stall, and the worker log's last error-looking line."""
    log = home / "logs" / "worker.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    errors = [line for line in lines if "Error" in line or "ERROR" in line]
    last = errors[-1] if errors else "(no error in the worker log)"
    return (
        f"no spec finished for {STALL_SECONDS:g} s (at {finished}); worker log {log}: {last} "
        "(rerun with --keep to inspect)"
    )


def report_progress(home: Path, count: int, elapsed: float) -> int:
    """One stderr line: specs finished so far, rate, a naive time-to-go; the count."""
    statuses = spec_statuses(home)
    done = sum(statuses.get(status, 0) for status in ("completed", "failed", "skipped"))
    rate = done / elapsed if elapsed else 0.0
    to_go = f", ~{(count - done) / rate:.0f} s to go" if rate else ""
    line = f"  {done}/{count} finished after {elapsed:.0f} s ({rate:.1f}/s{to_go})"
    print(line, file=sys.stderr)
    return done


def run_engine(scratch: Scratch, count: int) -> EngineRun:
    """Time ``graph run --queue`` + ``graph wait``, then read the run record."""
    started = time.perf_counter()
    canopy_json(scratch, "graph", "run", GRAPH_NAME, "--queue", QUEUE_NAME)
    settled = wait_with_progress(scratch, count, started)
    seconds = time.perf_counter() - started
    run = canopy_json(scratch, "graph", "info", GRAPH_NAME)["runs"][0]
    return EngineRun(
        seconds=seconds,
        settled=settled,
        workflow_id=str(run["workflow_id"]),
        record_seconds=record_seconds(run),
    )


def record_seconds(run: dict[str, Any]) -> float | None:
    """The run record's own ``started_at`` → ``ended_at`` (no CLI start-up in it)."""
    if not run.get("started_at") or not run.get("ended_at"):
        return None
    started = datetime.fromisoformat(str(run["started_at"]))
    ended = datetime.fromisoformat(str(run["ended_at"]))
    return (ended - started).total_seconds()


async def read_chain(address: str, workflow_id: str) -> Chain:
    """History lengths of every execution with this workflow id (the continue-as-new chain),
    waiting for visibility to list the closing execution; the largest is counted too."""
    from temporalio.client import Client, WorkflowExecutionStatus
    from temporalio.contrib.pydantic import pydantic_data_converter

    client = await Client.connect(address, data_converter=pydantic_data_converter)
    query = f"WorkflowId = '{workflow_id}'"
    deadline = time.monotonic() + 30
    while True:
        executions = [execution async for execution in client.list_workflows(query)]
        statuses = [execution.status for execution in executions]
        if WorkflowExecutionStatus.COMPLETED in statuses or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    lengths = []
    for execution in executions:
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        lengths.append((await handle.describe()).history_length)
    names = [status.name if status else "UNKNOWN" for status in statuses]
    if not lengths:
        return Chain(lengths=[], statuses=names, largest_counted=0, phases={}, phase_specs=0)
    largest = executions[lengths.index(max(lengths))].run_id
    history = await client.get_workflow_handle(workflow_id, run_id=largest).fetch_history()
    phases, specs = phase_seconds(history.events)
    return Chain(
        lengths=lengths,
        statuses=names,
        largest_counted=len(history.events),
        phases=phases,
        phase_specs=specs,
    )


def phase_seconds(events: Sequence[Any]) -> tuple[dict[str, Phase], int]:
    """Attribute the time between consecutive history events to what happened in it.

    GraphRun runs one activity at a time, so its history is one sequence: workflow task
    scheduled → started (queued for the worker) → completed (on the worker), activity
    scheduled → started (queued) → completed (running), and so on. Summing the gaps by
    kind shows whether the per-spec cost is the server, the worker or the activities.
    Also returns how many specs the execution began.
    """
    from temporalio.api.enums.v1 import EventType

    activities: dict[int, tuple[str, str]] = {}
    phases: dict[str, Phase] = {}
    for previous, event in itertools.pairwise(events):
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            activities[event.event_id] = (attributes.activity_type.name, attributes.task_queue.name)
        label = phase_label(event, activities)
        gap = event.event_time.ToNanoseconds() - previous.event_time.ToNanoseconds()
        phase = phases.setdefault(label, Phase())
        phase.seconds += gap / 1e9
        phase.count += 1
    return phases, [name for name, _ in activities.values()].count("begin_spec")


def phase_label(event: Any, activities: dict[int, tuple[str, str]]) -> str:
    """What the gap before ``event`` was spent on; activity waits are lumped per task queue
    (main: store bookkeeping, often eagerly dispatched; agents: nodes and git)."""
    from temporalio.api.enums.v1 import EventType

    kind = event.event_type
    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        return "workflow task queued (scheduled → started)"
    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        return "workflow task on the worker (started → completed)"
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        scheduled = event.activity_task_started_event_attributes.scheduled_event_id
        queue = activities.get(scheduled, ("?", "?"))[1]
        return f"activity queued (scheduled → started) on `{queue}`"
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
        return f"activity running (started → completed): `{activities.get(scheduled, '?')[0]}`"
    return "other (between events written together)"


def measure(scratch: Scratch, count: int) -> Results:
    """Set up, bracket the engine run with baselines, collect memory and history."""
    make_repo(scratch.repo)
    fill_queue(scratch.home, count, QUEUE_NAME, workdir_of=lambda _: str(scratch.repo))
    create_graph(scratch)
    with daemons_up(scratch):
        idle = worker_memory(scratch.home)
        print(f"baseline loop over {count} specs…", file=sys.stderr)
        before = baseline_seconds(scratch.repo, count)
        print(f"engine: draining {count} specs…", file=sys.stderr)
        cpu_before = daemon_cpu(scratch.home)
        engine = run_engine(scratch, count)
        cpu = {name: used - cpu_before[name] for name, used in daemon_cpu(scratch.home).items()}
        print("baseline loop again…", file=sys.stderr)
        after = baseline_seconds(scratch.repo, count)
        chain = asyncio.run(read_chain(scratch.address, engine.workflow_id))
        worker, server = worker_memory(scratch.home), server_memory(scratch.home)
    return Results(
        count=count,
        baselines=[before, after],
        engine=engine,
        idle_worker=idle,
        worker=worker,
        server=server,
        chain=chain,
        spec_statuses=spec_statuses(scratch.home),
        cpu=cpu,
    )


# --- reporting ------------------------------------------------------------------------------


def problems(results: Results) -> list[str]:
    """What makes the figures untrustworthy: an unsettled run or specs left undone."""
    found = []
    if results.engine.settled != "completed":
        found.append(f"the run settled {results.engine.settled}, not completed")
    if results.spec_statuses != {"completed": results.count}:
        found.append(f"spec statuses {results.spec_statuses}, expected all completed")
    if results.chain.statuses.count("COMPLETED") != 1:
        found.append(f"continue-as-new chain statuses {results.chain.statuses}")
    return found


def overhead_table(results: Results) -> list[str]:
    """Engine against baseline: totals, per spec, overhead and ratio."""
    n, base, engine = results.count, results.baseline, results.engine.seconds
    before, after = results.baselines
    rows = [
        f"| baseline: `sh -c true` + `git status` loop (mean of {before:.1f} s before, "
        f"{after:.1f} s after) | {base:.1f} | {base / n * 1000:.1f} | 1.00 |",
        f"| engine: `graph run --queue` + `graph wait` | {engine:.1f} | "
        f"{engine / n * 1000:.1f} | {engine / base:.2f} |",
    ]
    if results.engine.record_seconds is not None:
        record = results.engine.record_seconds
        rows.append(
            f"| engine: run record `started_at` → `ended_at` | {record:.1f} | "
            f"{record / n * 1000:.1f} | {record / base:.2f} |"
        )
    overhead_ms = (engine - base) / n * 1000
    return [
        f"{n} specs, one command node (`{NODE_COMMAND}`), SQLite store, embedded dev server\n",
        "| measure | total s | per spec ms | x baseline |",
        "| --- | ---: | ---: | ---: |",
        *rows,
        f"\nper-spec overhead (engine - baseline): **{overhead_ms:.1f} ms**; "
        f"engine/baseline: **{engine / base:.2f}x**",
    ]


def mib(kib: int) -> str:
    """KiB as MiB with one decimal."""
    return f"{kib / 1024:.1f}"


def run_lengths(lengths: list[int]) -> str:
    """History lengths, most common first: ``4121 x 99, 191 x 1`` (a bounded chain repeats
    one length; a growing one would not)."""
    counts: dict[int, int] = {}
    for length in lengths:
        counts[length] = counts.get(length, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], -item[0]))
    return ", ".join(f"{length} x {times}" for length, times in ordered)


def drain_table(results: Results) -> list[str]:
    """Throughput, memory and the continue-as-new chain of the run."""
    n, engine, chain = results.count, results.engine.seconds, results.chain
    per_execution = os.environ.get("CANOPY_SPECS_PER_EXECUTION", DEFAULT_SPECS_PER_EXECUTION)
    largest = max(chain.lengths) if chain.lengths else 0
    server = (
        f"{mib(results.server.peak_kib)} / {mib(results.server.rss_kib)}"
        if results.server
        else "n/a"
    )
    rows = [
        ("specs drained", f"{n}"),
        ("settled", f"{results.engine.settled}; specs {results.spec_statuses}"),
        ("wall time, run start → settled (s)", f"{engine:.1f}"),
        ("throughput (specs/s)", f"{n / engine:.2f}"),
        ("worker VmHWM after `up` (idle), MiB", mib(results.idle_worker.peak_kib)),
        ("worker VmHWM before `down`, MiB", mib(results.worker.peak_kib)),
        ("worker VmRSS before `down`, MiB", mib(results.worker.rss_kib)),
        ("dev server VmHWM / VmRSS before `down`, MiB", server),
        *(
            (f"{name} CPU during the run: s (ms per spec)", f"{used:.1f} ({used / n * 1000:.1f})")
            for name, used in results.cpu.items()
        ),
        ("executions in the continue-as-new chain", f"{len(chain.lengths)}"),
        ("their history lengths (events x executions)", run_lengths(chain.lengths)),
        ("specs_per_execution", f"{per_execution}"),
        (
            "largest execution history (events)",
            f"{largest} (counted via fetch_history: {chain.largest_counted})",
        ),
        ("history events, all executions", f"{sum(chain.lengths)}"),
        ("history events per spec", f"{sum(chain.lengths) / n:.1f}"),
    ]
    return [
        f"drain of {n} specs through one command node\n",
        "| figure | value |",
        "| --- | ---: |",
        *(f"| {label} | {value} |" for label, value in rows),
    ]


def phase_table(results: Results) -> list[str]:
    """Where the per-spec time of the largest execution went, biggest first."""
    chain = results.chain
    specs = max(chain.phase_specs, 1)
    total = sum(phase.seconds for phase in chain.phases.values()) or 1.0
    rows = sorted(chain.phases.items(), key=lambda item: -item[1].seconds)
    return [
        f"where the time goes: largest execution ({chain.phase_specs} specs), gaps between "
        "consecutive history events\n",
        "| phase | per spec | ms per spec | ms each | share |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {label} | {phase.count / specs:.1f} | {phase.seconds / specs * 1000:.1f} | "
            f"{phase.seconds / phase.count * 1000:.1f} | {phase.seconds / total:.0%} |"
            for label, phase in rows
        ),
        f"| **total** | | **{total / specs * 1000:.1f}** | | 100% |",
    ]


# --- entry point ----------------------------------------------------------------------------


def parse_options() -> argparse.Namespace:
    """``--specs N`` (overhead, default 200) or ``--drain N`` (scale run), and ``--keep``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--specs", type=int, default=200, help="overhead mode: N specs")
    mode.add_argument(
        "--drain", type=int, nargs="?", const=10_000, help="drain mode: N specs (10000)"
    )
    parser.add_argument("--keep", action="store_true", help="leave the scratch dir behind")
    return parser.parse_args()


def main() -> None:
    """Measure in a scratch dir, print the tables, exit 1 if the run did not complete."""
    options = parse_options()
    count = options.drain if options.drain is not None else options.specs
    root = Path(tempfile.mkdtemp(prefix="canopy-dispatch-"))
    print(f"scratch dir {root}", file=sys.stderr)
    try:
        results = measure(make_scratch(root), count)
    finally:
        if options.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    tables = [overhead_table(results), drain_table(results), phase_table(results)]
    if options.drain is not None:
        tables[:2] = tables[1::-1]
    print("\n\n".join("\n".join(table) for table in tables))
    found = problems(results)
    if found:
        print("\nPROBLEMS: " + "; ".join(found))
        sys.exit(1)


if __name__ == "__main__":
    main()
