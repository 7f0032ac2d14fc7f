"""CLI latency with 10,000 specs in the store, against a bare interpreter start.

Usage: ``make bench`` or ``.venv/bin/python -m bench.cli_latency [--specs N] [--sessions S]
[--runs R]``.
Each command runs R times in a fresh process (output to /dev/null); the table gives the
median wall time and its ratio to ``python -c pass`` measured in the same run, so the
figures compare across machines. It covers every read command, the common writes
(``spec create``, ``queue add``, ``session new``, ``session close``, ``graph create``,
``graph edit``, ``graph delete``), ``canopy --help`` and a group's ``--help``, a steering
command (``graph pause``, refused by the store before any signal), and the floors under
the slowest of them: bare imports of the graph model and the Temporal SDK. It reports
which of the heavy packages each command imported. Commands run with their bytecode
cached, as in an installation (:func:`bench.commands.command_env`).
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from bench.backlog import add_sessions, fill_queue
from bench.commands import command_env
from canopy.backlog.specformat import SECTION_NAMES, render_tagged
from canopy.ids import new_id
from canopy.ops import graphs, queues
from canopy.ops.notifications import notify
from canopy.store.engine import Store
from canopy.timefmt import utcnow

BASELINE = "python -c pass (baseline)"
REFUSED = "graph pause G (idle: refused, exit 1)"
"""The one command expected to exit 1: the store refuses it before Temporal is asked."""
HEAVY = ("temporalio", "sqlalchemy", "typer", "pydantic", "rich", "jinja2")
"""Packages worth knowing a command loaded: each costs several bare interpreter starts."""
BOUND_SPECS = 20
NOTIFICATIONS = 100

Argv = Callable[[int], list[str]]
"""A command's argv in a given round (writes that cannot repeat take a fresh spec)."""


def fill_store(home: Path, count: int, sessions: int, rounds: int) -> dict[str, str]:
    """The scratch store, and the ids the commands name.

    ``count`` specs over 10 workdirs, a third completed, all in one queue; ``sessions``
    live sessions; a graph with ``BOUND_SPECS`` bound specs and one finished queue run
    over them (three node runs per spec), which form the queue ``small``;
    notifications; a fresh spec per round for ``queue add small``; the graph ``edited``
    for ``graph edit``, and a graph per round for ``graph delete`` (``doomed-N``).
    """
    ids = fill_queue(
        home,
        count,
        "everything",
        workdir_of=lambda i: f"/src/project-{i % 10}",
        status_of=lambda i: "pending" if i % 3 else "completed",
    )
    add_sessions(home, sessions)
    bound = fill_queue(home, BOUND_SPECS, "small", workdir_of=lambda _: "/src/app")
    pool = fill_queue(home, rounds + 2, "pool", workdir_of=lambda _: "/src/app")
    store = Store(f"sqlite:///{home / 'canopy.db'}")
    graph = graphs.graph_create(store, _definition(bound))
    _add_finished_run(store, graph["id"], bound)
    for name in ("edited", *(f"doomed-{i}" for i in range(rounds + 1))):
        graphs.graph_create(store, _definition([], name))
    with store.transaction() as rows:
        for i in range(NOTIFICATIONS):
            notify(rows, "session_not_found", f"notification {i}: a prompt is kept")
    store.close()
    return {
        "spec": ids[0],
        "graph": graph["id"],
        "session": "session-0",
        **{f"add-{i}": spec_id for i, spec_id in enumerate(pool)},
    }


def _definition(specs: list[str], name: str = "build") -> dict[str, object]:
    """Three nodes (an agent, a command, an ensemble fixer) bound to ``specs``."""
    return {
        "name": name,
        "workdir": "/src/app",
        "nodes": [
            {"name": "implement", "platform": "claude", "prompt": "Implement {{spec_body}}"},
            {"name": "test", "command": "make test", "on_failure": "fix"},
            {"name": "fix", "ensemble": "fixers", "prompt": "Fix the tests.", "next": "test"},
        ],
        "ensembles": {"fixers": [{"platform": "claude"}, {"platform": "codex"}]},
        "specs": specs,
    }


def _add_finished_run(store: Store, graph_id: str, specs: list[str]) -> None:
    """A completed run of the graph over the small queue: what ``graph info`` shows."""
    queue_id = queues.queue_list(store, "small")["id"]
    started = utcnow() - timedelta(hours=1)
    run_id = new_id("run")
    with store.transaction() as rows:
        rows(
            "INSERT INTO runs (id, graph_id, number, queue_id, workdir, workflow_id, status,"
            " summary, started_at, ended_at) VALUES (:id, :graph_id, 1, :queue_id, '/src/app',"
            " :workflow_id, 'completed', :summary, :started, :ended)",
            {
                "id": run_id,
                "graph_id": graph_id,
                "queue_id": queue_id,
                "workflow_id": f"graph-{graph_id}-1",
                "summary": {"completed": len(specs)},
                "started": started,
                "ended": utcnow(),
            },
        )
        for spec_id in specs:
            rows(
                "INSERT INTO run_specs (run_id, spec_id, outcome, ended_node, started_at,"
                " ended_at) VALUES (:run_id, :spec_id, 'completed', 'test', :at, :at)",
                {"run_id": run_id, "spec_id": spec_id, "at": started},
            )
            for node in ("implement", "test", "fix"):
                rows(
                    "INSERT INTO node_runs (run_id, spec_id, node, visit, platform, status,"
                    " exit_code, started_at, ended_at) VALUES (:run_id, :spec_id, :node, 1,"
                    " :platform, 'succeeded', 0, :at, :at)",
                    {
                        "run_id": run_id,
                        "spec_id": spec_id,
                        "node": node,
                        "platform": "claude" if node != "test" else None,
                        "at": started,
                    },
                )


def same(argv: list[str]) -> Argv:
    """A command whose argv is the same every round."""
    return lambda _round: argv


def interleaved_medians(
    commands: dict[str, Argv], env: dict[str, str], runs: int
) -> dict[str, float]:
    """Median wall time of each command over ``runs`` rounds (after one warm-up round).

    Every round runs each command once, in turn, so background load hits the baseline
    and the commands alike and the ratios stay meaningful on a busy machine.
    """
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for round_number in range(runs + 1):
        for label, argv in commands.items():
            started = time.perf_counter()
            done = subprocess.run(
                argv(round_number), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            assert done.returncode == (1 if label == REFUSED else 0), (label, done.returncode)
            if round_number:
                samples[label].append(time.perf_counter() - started)
    return {label: statistics.median(values) for label, values in samples.items()}


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """Which of :data:`HEAVY` running ``argv`` under ``-X importtime`` loaded."""
    script = argv[1:] if argv[0] == sys.executable else argv
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", *script],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    loaded = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in traced.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return [name for name in HEAVY if name in loaded]


def main() -> None:
    """Fill a scratch store, time the commands, print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    if options.sessions < options.runs + 3:
        parser.error("--sessions must exceed --runs by 3: session close takes one per round")
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        ids = fill_store(home, options.specs, options.sessions, options.runs)
        env = command_env(home)
        python = sys.executable
        canopy = [str(Path(python).parent / "canopy")]
        body = render_tagged({name: f"the {name}" for name in SECTION_NAMES})
        definition, edit = home / "extra.json", home / "edited.json"
        definition.write_text(json.dumps(_definition([], "extra")))
        edit.write_text(json.dumps(_definition([], "edited")))
        commands: dict[str, Argv] = {
            BASELINE: same([python, "-c", "pass"]),
            "canopy --help": same([*canopy, "--help"]),
            "canopy graph --help": same([*canopy, "graph", "--help"]),
            f"spec list --json (all {options.specs})": same([*canopy, "spec", "list", "--json"]),
            "spec list --workdir /src/project-3 --status pending --json": same([
                *canopy, "spec", "list", "--workdir", "/src/project-3", "--status", "pending",
                "--json",
            ]),
            "spec list --status failed --json (no rows: fixed cost)": same([
                *canopy, "spec", "list", "--status", "failed", "--json",
            ]),
            "spec get ID --json": same([*canopy, "spec", "get", ids["spec"], "--json"]),
            "spec get ID": same([*canopy, "spec", "get", ids["spec"]]),
            "queue list (table)": same([*canopy, "queue", "list"]),
            "queue list --json": same([*canopy, "queue", "list", "--json"]),
            "graph list (table)": same([*canopy, "graph", "list"]),
            "graph list --json": same([*canopy, "graph", "list", "--json"]),
            "graph info G (tables)": same([*canopy, "graph", "info", ids["graph"]]),
            "graph info G --json": same([*canopy, "graph", "info", ids["graph"], "--json"]),
            f"session list --json ({options.sessions} live)": same([
                *canopy, "session", "list", "--json",
            ]),
            "session get NAME --json": same([*canopy, "session", "get", ids["session"], "--json"]),
            f"notifications --json ({NOTIFICATIONS} stored, 50 shown)": same([
                *canopy, "notifications", "--json",
            ]),
            "write: spec create --name N --body B --json": same([
                *canopy, "spec", "create", "--name", "new", "--body", body, "--json",
            ]),
            "write: queue add small SPEC (table)": lambda round_number: [
                *canopy, "queue", "add", "small", ids[f"add-{round_number}"],
            ],
            "write: graph create -f FILE --json": same([
                *canopy, "graph", "create", "-f", str(definition), "--json",
            ]),
            "write: graph edit NAME -f FILE --json": same([
                *canopy, "graph", "edit", "edited", "-f", str(edit), "--json",
            ]),
            "write: graph delete NAME --json": lambda round_number: [
                *canopy, "graph", "delete", f"doomed-{round_number}", "--json",
            ],
            "write: session new --platform claude --json": same([
                *canopy, "session", "new", "--platform", "claude", "--workdir", scratch, "--json",
            ]),
            "write: session close NAME --json": lambda round_number: [
                *canopy, "session", "close", f"session-{round_number + 1}", "--json",
            ],
            REFUSED: same([*canopy, "graph", "pause", ids["graph"]]),
            "floor: import canopy.graphs.model": same([
                python, "-c", "import canopy.graphs.model",
            ]),
            "floor: import sqlalchemy.orm": same([python, "-c", "import sqlalchemy.orm"]),
            "floor: import temporalio.client": same([python, "-c", "import temporalio.client"]),
        }  # fmt: skip
        medians = interleaved_medians(commands, env, options.runs)
        baseline = medians[BASELINE]
        print(f"{options.specs} specs, median of {options.runs} interleaved runs\n")
        print("| command | median ms | x baseline | imports |")
        print("| --- | ---: | ---: | --- |")
        for label, argv in commands.items():
            seconds = medians[label]
            loaded = ", ".join(heavy_imports(argv(options.runs + 1), env)) or "-"
            print(f"| `{label}` | {seconds * 1000:.1f} | {seconds / baseline:.2f} | {loaded} |")


if __name__ == "__main__":
    main()
