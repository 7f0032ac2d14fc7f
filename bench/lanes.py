"""Runs of lanes: wall time of one queue drained with 1, 2, 4 and 8 lanes, side by side,
what integration costs per spec, and many graphs of four lanes at once on one worker.

Usage: ``.venv/bin/python -m bench.lanes [--specs 16] [--sleep 2] [--graphs 20]
[--engine-ref REF] [--keep]``.

In a scratch ``CANOPY_HOME`` with free ports it runs ``canopy up`` (embedded dev server
plus one worker), then, for each lane count, a fresh one-commit repo, a queue of N specs
and a graph whose one command node sleeps S seconds and commits a file of its own; it
times ``graph run`` to settled and checks that every spec completed, that the repo's
branch holds one commit per spec in queue order, and that no worktree or branch of the
run is left. Each figure is set against the ideal, ``ceil(N / lanes) x S``: what is over
it, per spec, is the cost of dispatching, opening lanes and integrating. The 4-lane run's
history gives the time its lane activities took (opening, integrating, removing).

Then ``--graphs`` graphs of four lanes each, over their own repos and queues of N / 2
specs, are started at once on the same worker: wall time and per-spec overhead against
one such graph alone, and the worker's peak memory (``VmHWM``) before and after.
Progress goes to stderr, results to stdout as markdown.
"""

import argparse
import asyncio
import json
import math
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.backlog import fill_queue
from bench.dispatch_overhead import (
    GIT_IDENTITY,
    Memory,
    Scratch,
    canopy_json,
    daemons_up,
    make_repo,
    make_scratch,
    worker_memory,
)

LANE_COUNTS = (1, 2, 4, 8)
TARGET_FOUR_LANES = 0.35
"""Four lanes must finish sleep-bound specs in at most this share of one lane's time."""
LANE_ACTIVITIES = ("open_lane_worktree", "integrate_lane_branch", "close_lane_worktree")


@dataclass(frozen=True)
class Drain:
    """One timed run: its lanes, specs, wall time and workflow id."""

    lanes: int
    specs: int
    seconds: float
    workflow_id: str


def node_command(sleep: float) -> str:
    """Sleep, then commit a file of the spec's own, named for it."""
    return (
        f'sleep {sleep}; echo "$CANOPY_SPEC_NAME" > "$CANOPY_SPEC_ID.txt" && git add -A'
        f' && git {shlex.join(GIT_IDENTITY)} commit -q -m "$CANOPY_SPEC_NAME"'
    )


def prepare(scratch: Scratch, name: str, lanes: int, specs: int, sleep: float) -> Path:
    """A fresh repo, a queue of ``specs`` specs and a graph of ``lanes`` lanes, all named
    ``name``; the repo."""
    repo = scratch.root / f"repo-{name}"
    repo.mkdir()
    make_repo(repo)
    fill_queue(scratch.home, specs, name, lambda _: str(repo))
    definition = {
        "name": name,
        "workdir": str(repo),
        "lanes": lanes,
        "nodes": [{"name": "work", "command": node_command(sleep)}],
    }
    path = scratch.root / f"{name}.json"
    path.write_text(json.dumps(definition))
    canopy_json(scratch, "graph", "create", "--file", str(path))
    return repo


def start(scratch: Scratch, name: str) -> str:
    """Start graph ``name`` over its queue; the workflow id."""
    started = canopy_json(scratch, "graph", "run", name, "--queue", name)
    return str(started["workflow_id"])


def wait(scratch: Scratch, name: str) -> None:
    """Until graph ``name`` settled; it must have completed."""
    settled = canopy_json(scratch, "graph", "wait", name, "--timeout", "3600")
    if settled["status"] != "completed":
        raise RuntimeError(f"graph {name} settled {settled['status']}: {settled.get('blocker')}")


def check(repo: Path, specs: int) -> None:
    """One commit per spec on main, in queue order, and nothing of the lanes left."""
    subjects = subprocess.run(
        ["git", "log", "--reverse", "--format=%s", "main"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    if subjects != ["initial", *(f"spec number {i}" for i in range(specs))]:
        raise RuntimeError(f"{repo}: commits out of order or missing: {subjects}")
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    branches = subprocess.run(
        ["git", "branch", "--format=%(refname:short)"], cwd=repo, capture_output=True, text=True
    ).stdout.split()
    if listed.count("worktree ") != 1 or branches != ["main"]:
        raise RuntimeError(f"{repo}: lanes left behind: {listed!r} {branches}")


def drain(scratch: Scratch, lanes: int, specs: int, sleep: float) -> Drain:
    name = f"lanes-{lanes}"
    repo = prepare(scratch, name, lanes, specs, sleep)
    began = time.monotonic()
    workflow_id = start(scratch, name)
    wait(scratch, name)
    seconds = time.monotonic() - began
    check(repo, specs)
    print(f"{lanes} lane(s): {seconds:.1f} s", file=sys.stderr)
    return Drain(lanes, specs, seconds, workflow_id)


async def lane_activity_seconds(address: str, workflow_id: str) -> dict[str, list[float]]:
    """How long each lane activity of the run took, scheduled to completed, by type."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    client = await Client.connect(address, data_converter=pydantic_data_converter)
    taken: dict[str, list[float]] = defaultdict(list)
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        scheduled: dict[int, tuple[str, float]] = {}
        for event in (await handle.fetch_history()).events:
            at = event.event_time.ToDatetime().timestamp()
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                kind = event.activity_task_scheduled_event_attributes.activity_type.name
                scheduled[event.event_id] = (kind, at)
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                attributes = event.activity_task_completed_event_attributes
                kind, since = scheduled[attributes.scheduled_event_id]
                if kind in LANE_ACTIVITIES:
                    taken[kind].append(at - since)
    return taken


def ideal(specs: int, lanes: int, sleep: float) -> float:
    return math.ceil(specs / lanes) * sleep


def lanes_table(drains: list[Drain], sleep: float) -> list[str]:
    one = drains[0].seconds
    lines = [
        "| lanes | wall s | x 1 lane | ideal s | over ideal, ms / spec |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in drains:
        over = (run.seconds - ideal(run.specs, run.lanes, sleep)) / run.specs * 1000
        lines.append(
            f"| {run.lanes} | {run.seconds:.1f} | {run.seconds / one:.2f} | "
            f"{ideal(run.specs, run.lanes, sleep):.0f} | {over:.0f} |"
        )
    four = next(run for run in drains if run.lanes == 4)
    verdict = "met" if four.seconds / one <= TARGET_FOUR_LANES else "MISSED"
    lines.append("")
    lines.append(
        f"Target: 4 lanes in at most {TARGET_FOUR_LANES}x one lane's time: "
        f"{four.seconds / one:.2f}x ({verdict})."
    )
    return lines


def activities_table(taken: dict[str, list[float]]) -> list[str]:
    lines = [
        "| lane activity (4 lanes) | count | mean ms | max ms |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind in LANE_ACTIVITIES:
        times = taken.get(kind, [])
        if times:
            lines.append(
                f"| `{kind}` | {len(times)} | {sum(times) / len(times) * 1000:.0f} | "
                f"{max(times) * 1000:.0f} |"
            )
    return lines


def many_graphs(scratch: Scratch, graphs: int, specs: int, sleep: float, idle: Memory) -> list[str]:
    """One graph of four lanes alone, then ``graphs`` of them at once: wall time, per-spec
    overhead over the ideal, and the worker's peak memory (``idle``: just after start-up;
    then after the lane-count drains and the one graph alone; then after the crowd)."""
    before = worker_memory(scratch.home)
    prepare_one = prepare(scratch, "alone", 4, specs, sleep)
    began = time.monotonic()
    start(scratch, "alone")
    wait(scratch, "alone")
    alone = time.monotonic() - began
    check(prepare_one, specs)
    names = [f"many-{index}" for index in range(graphs)]
    repos = [prepare(scratch, name, 4, specs, sleep) for name in names]
    began = time.monotonic()
    for name in names:
        start(scratch, name)
    for name in names:
        wait(scratch, name)
    together = time.monotonic() - began
    for repo in repos:
        check(repo, specs)
    after = worker_memory(scratch.home)
    print(f"alone {alone:.1f} s, {graphs} at once {together:.1f} s", file=sys.stderr)
    best = ideal(specs, 4, sleep)
    return [
        "| graphs of 4 lanes at once | specs | wall s | over ideal, ms / spec |",
        "| ---: | ---: | ---: | ---: |",
        f"| 1 | {specs} | {alone:.1f} | {(alone - best) / specs * 1000:.0f} |",
        f"| {graphs} | {graphs * specs} | {together:.1f} | "
        f"{(together - best) / (graphs * specs) * 1000:.0f} |",
        "",
        f"Worker VmHWM: {idle.peak_kib / 1024:.1f} MiB idle, {before.peak_kib / 1024:.1f} MiB "
        f"after the drains above, {after.peak_kib / 1024:.1f} MiB after {graphs} graphs at "
        f"once (VmRSS then {after.rss_kib / 1024:.1f} MiB).",
    ]


def parse_options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds each node sleeps")
    parser.add_argument("--graphs", type=int, default=20, help="graphs of 4 lanes at once")
    parser.add_argument("--engine-ref", help="run the engine as of this commit")
    parser.add_argument("--keep", action="store_true", help="leave the scratch dir behind")
    return parser.parse_args()


def main() -> None:
    options = parse_options()
    root = Path(tempfile.mkdtemp(prefix="canopy-bench-lanes-"))
    try:
        scratch = make_scratch(root, options.engine_ref)
        with daemons_up(scratch):
            idle = worker_memory(scratch.home)
            drains = [drain(scratch, lanes, options.specs, options.sleep) for lanes in LANE_COUNTS]
            four = next(run for run in drains if run.lanes == 4)
            taken = asyncio.run(lane_activity_seconds(scratch.address, four.workflow_id))
            crowd = many_graphs(scratch, options.graphs, options.specs // 2, options.sleep, idle)
        print(f"engine {scratch.engine}; {options.specs} specs, nodes sleep {options.sleep} s\n")
        print("\n".join(lanes_table(drains, options.sleep)))
        print()
        print("\n".join(activities_table(taken)))
        print()
        print("\n".join(crowd))
    finally:
        if options.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
