"""CLI latency with 10,000 specs in the store, against a bare interpreter start.

Usage: ``make bench`` or ``.venv/bin/python bench/cli_latency.py [--specs N] [--sessions S]
[--runs R]``.
Each command runs R times in a fresh process (output to /dev/null); the table gives the
median wall time and its ratio to ``python -c pass`` measured in the same run, so the
figures compare across machines. Also reports whether the command imported temporalio.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.backlog import add_sessions, fill_queue

BASELINE = "python -c pass (baseline)"


def fill_store(home: Path, count: int) -> str:
    """``count`` specs over 10 workdirs, a third completed, all in one queue; one id."""
    ids = fill_queue(
        home,
        count,
        "everything",
        workdir_of=lambda i: f"/src/project-{i % 10}",
        status_of=lambda i: "pending" if i % 3 else "completed",
    )
    return ids[0]


def interleaved_medians(
    commands: dict[str, list[str]], env: dict[str, str], runs: int
) -> dict[str, float]:
    """Median wall time of each command over ``runs`` rounds (after one warm-up round).

    Every round runs each command once, in turn, so background load hits the baseline
    and the commands alike and the ratios stay meaningful on a busy machine.
    """
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for round_number in range(runs + 1):
        for label, argv in commands.items():
            started = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            if round_number:
                samples[label].append(time.perf_counter() - started)
    return {label: statistics.median(values) for label, values in samples.items()}


def imports_temporalio(argv: list[str], env: dict[str, str]) -> bool:
    """Whether running ``argv`` under ``-X importtime`` loaded temporalio."""
    script = argv[1:] if argv[0] == sys.executable else argv
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", *script],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    return "temporalio" in traced.stderr


def main() -> None:
    """Fill a scratch store, time the commands, print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        some_spec = fill_store(home, options.specs)
        add_sessions(home, options.sessions)
        env = {**os.environ, "CANOPY_HOME": str(home)}
        env.pop("CANOPY_DB_URL", None)
        python = sys.executable
        canopy = [str(Path(python).parent / "canopy")]
        commands = {
            BASELINE: [python, "-c", "pass"],
            f"canopy spec list --json (all {options.specs})": [*canopy, "spec", "list", "--json"],
            "canopy spec list --workdir /src/project-3 --status pending --json": [
                *canopy, "spec", "list", "--workdir", "/src/project-3", "--status", "pending",
                "--json",
            ],
            "canopy spec list --status failed --json (no rows: fixed cost)": [
                *canopy, "spec", "list", "--status", "failed", "--json",
            ],
            "canopy queue list": [*canopy, "queue", "list"],
            f"canopy session list --json ({options.sessions} live)": [
                *canopy, "session", "list", "--json",
            ],
            "canopy spec get ID --json (full typer + SQLAlchemy path)": [
                *canopy, "spec", "get", some_spec, "--json",
            ],
        }  # fmt: skip
        medians = interleaved_medians(commands, env, options.runs)
        baseline = medians[BASELINE]
        print(f"{options.specs} specs, median of {options.runs} interleaved runs\n")
        print("| command | median ms | x baseline | imports temporalio |")
        print("| --- | ---: | ---: | --- |")
        for label, argv in commands.items():
            seconds = medians[label]
            temporal = "yes" if imports_temporalio(argv, env) else "no"
            print(f"| `{label}` | {seconds * 1000:.1f} | {seconds / baseline:.2f} | {temporal} |")


if __name__ == "__main__":
    main()
