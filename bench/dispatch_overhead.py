"""Per-spec orchestration cost of a graph run, against the work itself and the raw Temporal floor.

Usage: ``make bench-dispatch`` or ``.venv/bin/python -m bench.dispatch_overhead
[--specs N | --drain N] [--engine-ref REF] [--keep]``.

In a scratch ``CANOPY_HOME`` with free ports it runs ``canopy up`` (embedded Temporal dev
server plus worker), makes a one-commit git repo, N specs in one queue and a graph with a
single command node running ``true`` in that repo, then times ``canopy graph run G --queue
Q`` + ``canopy graph wait G`` (run start to settled). The baseline, measured in the same
run before and after the engine (so background load hits both alike), is a bash loop that
per spec runs the same command the node runs (``/bin/sh -c true``) and ``git status
--porcelain`` in the same repo: the work a dispatcher cannot avoid. The difference per spec
is what Temporal round trips, store bookkeeping and log files cost.

How much of that Temporal itself imposes is the **floor** (:mod:`bench.temporal_floor`): a
minimal workflow running one trivial activity per item, on the same dev server, measured
right after the first baseline and right before the second. Canopy's per-spec time is
reported as a multiple of the floor's per-item time, next to the history events,
activities and workflow tasks per spec (counted event by event over the run's whole
continue-as-new chain) and the targets set for them.

``--drain N`` is the scale run: the same measurement over a big queue (default 10,000),
reported as throughput, the worker's peak memory (``VmHWM``) and the largest history of
any execution in the run's continue-as-new chain, which must stay bounded. Both modes
print every table; ``--specs`` leads with the overhead, ``--drain`` with the drain figures.
Progress goes to stderr, results to stdout as markdown.

The CLI and the worker run from a copy of the engine's sources taken at start (see
:func:`snapshot_engine`), so concurrent edits to the checkout do not leak into a run;
``--engine-ref`` takes that copy from a commit instead of the working tree.
"""

import argparse
import asyncio
import io
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.backlog import fill_queue
from bench.temporal_floor import FloorRun, floor_run, run_step
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
"""GraphRunV2's default (``RunInput.specs_per_execution``), unless the env overrides it."""
FLOOR_ITEMS_MAX = 500
"""The floor loops over as many items as there are specs, up to this: its per-item cost
does not depend on length, and one execution of 500 items (~3,000 events) stays under the
history size at which a real workflow would continue as new."""
TARGET_FLOOR_RATIO = 1.5
"""The target for Canopy's per-spec time, as a multiple of the floor's per item."""
TARGET_EVENTS_PER_SPEC = 15.0
"""The target for history events per spec, over the whole continue-as-new chain."""
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
    engine: str
    """Which engine the snapshot holds (:func:`engine_version`), for the record."""

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
    """The executions of a workflow's continue-as-new chain, their histories counted event
    by event (``fetch_history``), so per-spec figures include every execution's start,
    end and hand-over, not just the steady state of one."""

    lengths: list[int]
    """History events of each execution."""
    statuses: list[str]
    activities: int
    """Activity tasks scheduled, all executions."""
    workflow_tasks: int
    """Workflow tasks completed, all executions."""
    phases: dict[str, Phase]
    """Time of the largest execution spent in each step between consecutive events."""
    phase_specs: int
    """Specs (floor: items) the largest execution worked on: its activities that begin one
    (:data:`SPEC_ACTIVITIES`; floor: ``run_step``)."""

    @property
    def events(self) -> int:
        """History events, all executions."""
        return sum(self.lengths)


@dataclass(frozen=True)
class Results:
    """Everything one benchmark measured."""

    count: int
    engine_source: str
    baselines: list[float]
    floors: list[FloorRun]
    floor_chain: Chain
    """The history of the first timed floor workflow."""
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

    @property
    def floor(self) -> float:
        """Seconds per item of the floor: mean of the runs bracketing the engine run."""
        return sum(floor.per_item for floor in self.floors) / len(self.floors)


# --- scratch setup ------------------------------------------------------------------------


def make_scratch(root: Path, ref: str | None = None) -> Scratch:
    """Data dir and repo side by side (the data dir must not make the tree dirty), and a
    frozen copy of the engine (from the working tree, or commit ``ref``) that every CLI
    call and the worker import."""
    home, repo = root / "home", root / "repo"
    home.mkdir()
    repo.mkdir()
    port, ui_port = free_ports(2)
    version = engine_version(ref)
    engine = snapshot_engine(root / "engine", ref)
    env = {**os.environ, "CANOPY_HOME": str(home)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(engine), env.get("PYTHONPATH")]))
    for variable in ("CANOPY_DB_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"):
        env.pop(variable, None)  # the bench owns its server and its SQLite store
    check_snapshot(engine, env)
    return Scratch(root, home, repo, port, ui_port, env, version)


def snapshot_engine(target: Path, ref: str | None = None) -> Path:
    """Copy the engine's sources, so edits landing in the checkout cannot change it mid-run.

    The worker's workflow sandbox re-reads workflow modules from disk whenever it builds a
    workflow instance (every continue-as-new, every cache eviction), and imports modules
    it has not seen yet lazily; in a shared checkout a long drain would otherwise end up
    running new workflow code against the activities and models it loaded at start.

    With ``ref`` the sources come from that commit, so others' uncommitted work in the
    checkout is not measured either and a recorded figure names the code it measured.
    """
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    origin = REPO_ROOT if ref is None else export_commit(ref, target.parent / "checkout")
    target.mkdir()
    for name in ENGINE_SOURCES:
        source = origin / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def engine_paths() -> list[str]:
    """Where the engine's sources live in the checkout: ``ENGINE_SOURCES`` and the top-level
    directories and files their links point to (``canopy/cli`` → ``cli``, …)."""
    paths = list(ENGINE_SOURCES)
    for name in ENGINE_SOURCES:
        source = REPO_ROOT / name
        if source.is_dir():
            links = [entry for entry in sorted(source.iterdir()) if entry.is_symlink()]
            paths += [str(entry.resolve().relative_to(REPO_ROOT)) for entry in links]
    return paths


def export_commit(ref: str, target: Path) -> Path:
    """The engine's sources at commit ``ref``, links included, extracted under ``target``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "--", *engine_paths()],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def engine_version(ref: str | None) -> str:
    """The engine a run measures: commit ``ref``, or the working tree, with its uncommitted
    changes named (in a shared checkout they may be someone's unfinished edit)."""
    commit = git_output("rev-parse", "--short", f"{ref or 'HEAD'}^{{commit}}")[0]
    if ref is not None:
        return f"commit {commit} (`--engine-ref {ref}`)"
    changed = [line[3:] for line in git_output("status", "--porcelain", "--", *engine_paths())]
    if not changed:
        return f"working tree = commit {commit}"
    return f"working tree: commit {commit} + uncommitted changes to {', '.join(changed)}"


def git_output(*args: str) -> list[str]:
    """Lines a git command prints in the checkout."""
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


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


SPEC_ACTIVITIES = ("begin_spec", "dispatch_node")
"""The activity that begins one spec of this benchmark's one-node graph: ``begin_spec`` in
``GraphRun`` (the retired type, before ``GraphRunV2``), the node's own ``dispatch_node``
since."""


async def read_chain(
    address: str, workflow_id: str, unit: tuple[str, ...] = SPEC_ACTIVITIES
) -> Chain:
    """The histories of every execution with this workflow id (the continue-as-new chain),
    waiting for visibility to list the closing execution. One history is in memory at a
    time: a 10,000-spec drain has over half a million events. ``unit`` names the activity
    that begins one spec (or floor item), to express the largest execution's phases per
    spec."""
    from temporalio.api.enums.v1 import EventType
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
    lengths: list[int] = []
    kinds: Counter[int] = Counter()
    phases: dict[str, Phase] = {}
    specs = 0
    for execution in executions:
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        events = (await handle.fetch_history()).events
        kinds.update(event.event_type for event in events)
        if len(events) > max(lengths, default=0):
            phases, specs = phase_seconds(events, unit)
        lengths.append(len(events))
    return Chain(
        lengths=lengths,
        statuses=[status.name if status else "UNKNOWN" for status in statuses],
        activities=kinds[EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED],
        workflow_tasks=kinds[EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED],
        phases=phases,
        phase_specs=specs,
    )


def phase_seconds(events: Sequence[Any], unit: tuple[str, ...]) -> tuple[dict[str, Phase], int]:
    """Attribute the time between consecutive history events to what happened in it.

    GraphRun runs one activity at a time, so its history is one sequence: workflow task
    scheduled → started (queued for the worker) → completed (on the worker), activity
    scheduled → started (queued) → completed (running), and so on. Summing the gaps by
    kind shows whether the per-spec cost is the server, the worker or the activities.
    Also returns how many specs the execution began (its activities named in ``unit``).
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
    return phases, sum(name in unit for name, _ in activities.values())


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


def floor_seconds(scratch: Scratch, count: int) -> FloorRun:
    """The raw Temporal floor on this run's dev server: one activity running the node's
    command per item, ``count`` items (at most ``FLOOR_ITEMS_MAX``)."""
    items = min(count, FLOOR_ITEMS_MAX)
    print(f"floor: Temporal loop over {items} one-activity items…", file=sys.stderr)
    return asyncio.run(floor_run(scratch.address, items, NODE_COMMAND))


def measure(scratch: Scratch, count: int) -> Results:
    """Set up, bracket the engine run with baselines and floors (bash, floor, engine, floor,
    bash: background load hits each alike), collect memory and history."""
    make_repo(scratch.repo)
    fill_queue(scratch.home, count, QUEUE_NAME, workdir_of=lambda _: str(scratch.repo))
    create_graph(scratch)
    with daemons_up(scratch):
        idle = worker_memory(scratch.home)
        print(f"baseline loop over {count} specs…", file=sys.stderr)
        before = baseline_seconds(scratch.repo, count)
        floor_before = floor_seconds(scratch, count)
        print(f"engine: draining {count} specs…", file=sys.stderr)
        cpu_before = daemon_cpu(scratch.home)
        engine = run_engine(scratch, count)
        cpu = {name: used - cpu_before[name] for name, used in daemon_cpu(scratch.home).items()}
        floor_after = floor_seconds(scratch, count)
        print("baseline loop again…", file=sys.stderr)
        after = baseline_seconds(scratch.repo, count)
        print("counting history events…", file=sys.stderr)
        chain = asyncio.run(read_chain(scratch.address, engine.workflow_id))
        floor_chain = asyncio.run(
            read_chain(scratch.address, floor_before.workflow_id, unit=(run_step.__name__,))
        )
        worker, server = worker_memory(scratch.home), server_memory(scratch.home)
    return Results(
        count=count,
        engine_source=scratch.engine,
        baselines=[before, after],
        floors=[floor_before, floor_after],
        floor_chain=floor_chain,
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
    if results.floor_chain.statuses != ["COMPLETED"]:
        found.append(f"floor workflow statuses {results.floor_chain.statuses}")
    return found


def overhead_table(results: Results) -> list[str]:
    """Engine against baseline and floor: totals, per spec, overhead and ratios."""
    n, engine = results.count, results.engine.seconds
    base, floor = results.baseline / n, results.floor  # seconds per spec

    def row(label: str, total: float, per_spec: float) -> str:
        return (
            f"| {label} | {total:.1f} | {per_spec * 1000:.1f} | {per_spec / base:.2f} | "
            f"{per_spec / floor:.2f} |"
        )

    before, after = results.baselines
    first, second = results.floors
    rows = [
        row(
            f"baseline: `sh -c true` + `git status` loop (mean of {before:.1f} s before, "
            f"{after:.1f} s after)",
            results.baseline,
            base,
        ),
        row(
            f"floor: Temporal workflow, one `sh -c {NODE_COMMAND}` activity per item "
            f"({first.items} items; {first.per_item * 1000:.1f} ms before, "
            f"{second.per_item * 1000:.1f} ms after)",
            floor * first.items,
            floor,
        ),
        row("engine: `graph run --queue` + `graph wait`", engine, engine / n),
    ]
    if results.engine.record_seconds is not None:
        record = results.engine.record_seconds
        rows.append(row("engine: run record `started_at` → `ended_at`", record, record / n))
    per_spec = engine / n
    return [
        f"{n} specs, one command node (`{NODE_COMMAND}`), SQLite store, embedded dev server; "
        f"engine: {results.engine_source}\n",
        "| measure | total s | per spec ms | x baseline | x floor |",
        "| --- | ---: | ---: | ---: | ---: |",
        *rows,
        f"\nper-spec overhead: **{(per_spec - base) * 1000:.1f} ms** over the baseline, "
        f"**{(per_spec - floor) * 1000:.1f} ms** over the floor; engine/baseline "
        f"**{per_spec / base:.2f}x**, engine/floor **{per_spec / floor:.2f}x** "
        f"(target ≤ {TARGET_FLOOR_RATIO:g}x)",
    ]


def targets_table(results: Results) -> list[str]:
    """Canopy per spec against the floor per item, next to the targets: the history
    figures say how many round trips a spec costs, the time what they cost here."""
    n, chain, floor = results.count, results.chain, results.floor_chain
    items = results.floors[0].items
    engine_ms, floor_ms = results.engine.seconds / n * 1000, results.floor * 1000
    ratio, events = engine_ms / floor_ms, chain.events / n

    def met(value: float, target: float) -> str:
        return "yes" if value <= target else "**no**"

    rows = [
        ("wall time, ms", f"{engine_ms:.1f}", f"{floor_ms:.1f}", "", ""),
        (
            "x floor",
            f"{ratio:.2f}",
            "1.00",
            f"≤ {TARGET_FLOOR_RATIO:g}",
            met(ratio, TARGET_FLOOR_RATIO),
        ),
        (
            "history events",
            f"{events:.1f}",
            f"{floor.events / items:.1f}",
            f"≤ {TARGET_EVENTS_PER_SPEC:g}",
            met(events, TARGET_EVENTS_PER_SPEC),
        ),
        ("activities", f"{chain.activities / n:.2f}", f"{floor.activities / items:.2f}", "", ""),
        (
            "workflow tasks",
            f"{chain.workflow_tasks / n:.2f}",
            f"{floor.workflow_tasks / items:.2f}",
            "",
            "",
        ),
    ]
    return [
        f"per spec (engine: all {len(chain.lengths)} executions of the continue-as-new "
        "chain) and per floor item, against the targets\n",
        "| per spec | engine | floor | target | met |",
        "| --- | ---: | ---: | ---: | --- |",
        *(f"| {' | '.join(row)} |" for row in rows),
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
        ("largest execution history (events)", f"{largest}"),
        ("history events, all executions", f"{chain.events}"),
        ("history events per spec", f"{chain.events / n:.1f}"),
    ]
    return [
        f"drain of {n} specs through one command node\n",
        "| figure | value |",
        "| --- | ---: |",
        *(f"| {label} | {value} |" for label, value in rows),
    ]


def phase_table(chain: Chain, title: str, unit: str = "spec") -> list[str]:
    """Where the per-spec (per-item) time of the largest execution went, biggest first."""
    specs = max(chain.phase_specs, 1)
    total = sum(phase.seconds for phase in chain.phases.values()) or 1.0
    rows = sorted(chain.phases.items(), key=lambda item: -item[1].seconds)
    return [
        f"where the time goes: {title} ({chain.phase_specs} {unit}s), gaps between "
        "consecutive history events\n",
        f"| phase | per {unit} | ms per {unit} | ms each | share |",
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
    """``--specs N`` (overhead, default 200) or ``--drain N`` (scale run), ``--engine-ref``
    and ``--keep``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--specs", type=int, default=200, help="overhead mode: N specs")
    mode.add_argument(
        "--drain", type=int, nargs="?", const=10_000, help="drain mode: N specs (10000)"
    )
    parser.add_argument(
        "--engine-ref",
        metavar="REF",
        help="run the engine as of this commit (default: the working tree as it is)",
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
        results = measure(make_scratch(root, options.engine_ref), count)
    finally:
        if options.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    tables = [
        overhead_table(results),
        targets_table(results),
        phase_table(results.chain, "engine, largest execution"),
        phase_table(results.floor_chain, "floor", unit="item"),
    ]
    tables.insert(0 if options.drain is not None else 2, drain_table(results))
    print("\n\n".join("\n".join(table) for table in tables))
    found = problems(results)
    if found:
        print("\nPROBLEMS: " + "; ".join(found))
        sys.exit(1)


if __name__ == "__main__":
    main()
