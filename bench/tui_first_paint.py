"""``canopy tui`` first paint and memory with 10,000 specs, against ``canopy spec list``.

Usage: ``.venv/bin/python -m bench.tui_first_paint [--specs N] [--runs R] [--refreshes K]``.

Each round starts the TUI in a fresh process (Textual's headless driver, 120x40) and
times it from the spawn until its Backlog shows the specs it should (the heading counts
them all; the list shows the first 500) and the screen has been drawn; the same rounds
run ``canopy spec list --json`` (all N specs) and ``python -c pass``,
interleaved, so the ratios survive a busy machine. Each is also measured in CPU time
(user + system, all threads; the TUI's until its first paint), which other processes on
the machine hardly move, unlike wall-clock time. The TUI's
resident memory is read at first paint and again after K more refreshes (one a second),
to show whether it grows while it sits there (it does once, after the first paint, as
the graph and session operations load).
"""

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.commands import command_env

WORKDIRS = 10
PAINTED = "painted"
MEMORY = ("first", "middle", "after")
"""When the child reads its memory: at first paint, half way through the refreshes, at
the end."""


def rss_kib() -> int:
    """This process's resident memory in KiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def paint(workdir: str | None, expected: int, refreshes: int) -> None:
    """The child: start the TUI, say when the Backlog is drawn, then report memory."""
    from textual.widgets import Label

    from canopy.tui.app import CanopyApp
    from canopy.tui.view import REFRESH_SECONDS

    app = CanopyApp(workdir=workdir)
    async with app.run_test(size=(120, 40)):
        heading = app.query_one("#backlog-heading", Label)
        while str(heading.content) != f"Backlog ({expected})":
            await asyncio.sleep(0.005)
        drawn = asyncio.Event()
        app.call_after_refresh(drawn.set)  # the next screen refresh shows the Backlog
        await drawn.wait()
        cpu = time.process_time()
        print(PAINTED, flush=True)
        first = rss_kib()
        await asyncio.sleep(refreshes / 2 * REFRESH_SECONDS)
        middle = rss_kib()
        await asyncio.sleep(refreshes / 2 * REFRESH_SECONDS)
        report = {"cpu": cpu, "first": first, "middle": middle, "after": rss_kib()}
        print(json.dumps(report), flush=True)


def time_tui(argv: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Seconds from spawning the TUI until it says it painted, and its report: the CPU
    seconds it had used by then, and its memory."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    painted = time.perf_counter() - started
    report: dict[str, float] = json.loads(child.stdout.readline())
    child.wait(timeout=60)
    if line != PAINTED or child.returncode != 0:
        raise SystemExit(f"the TUI did not paint: {line!r}, exit {child.returncode}")
    return painted, report


def time_command(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return took, cpu


def main() -> None:
    """Fill a scratch store, time first paints against the CLI, print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument("--child", nargs=2, metavar=("WORKDIR", "EXPECTED"), help="internal")
    options = parser.parse_args()
    if options.child:
        workdir, expected = options.child
        asyncio.run(paint(workdir or None, int(expected), options.refreshes))
        return
    from bench.backlog import add_sessions, fill_queue  # SQLAlchemy: not in the children

    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        fill_queue(home, options.specs, "everything", lambda i: f"/src/project-{i % WORKDIRS}")
        add_sessions(home, 100)
        env = command_env(home)
        python, canopy = sys.executable, str(Path(sys.executable).parent / "canopy")
        child = [python, "-m", "bench.tui_first_paint", "--refreshes", str(options.refreshes)]
        one = f"/src/project-{WORKDIRS - 1}"
        commands = {
            "python -c pass (baseline)": [python, "-c", "pass"],
            f"canopy spec list --json (all {options.specs})": [canopy, "spec", "list", "--json"],
        }
        tuis = {
            f"canopy tui, all projects ({options.specs} in the Backlog)": [
                *child,
                "--child",
                "",
                str(options.specs),
            ],
            f"canopy tui --workdir {one} ({options.specs // WORKDIRS})": [
                *child,
                "--child",
                one,
                str(options.specs // WORKDIRS),
            ],
        }
        samples: dict[str, list[float]] = {label: [] for label in [*commands, *tuis]}
        memory: dict[str, list[dict[str, float]]] = {label: [] for label in tuis}
        cpu: dict[str, list[float]] = {label: [] for label in samples}
        for round_number in range(options.runs + 1):  # round 0 warms the caches up
            for label, argv in commands.items():
                took, used_cpu = time_command(argv, env)
                if round_number:
                    samples[label].append(took)
                    cpu[label].append(used_cpu)
            for label, argv in tuis.items():
                took, report = time_tui(argv, env)
                if round_number:
                    samples[label].append(took)
                    cpu[label].append(report["cpu"])
                    memory[label].append(report)
    spec_list_label = next(iter(commands.keys() - {"python -c pass (baseline)"}))
    wall = {label: statistics.median(values) for label, values in samples.items()}
    used = {label: statistics.median(values) for label, values in cpu.items()}
    half = options.refreshes // 2
    print(
        "| command | median ms | x spec list | CPU ms | CPU x spec list | RSS MiB: at paint | "
        f"after {half} refreshes | after {options.refreshes} |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, median in wall.items():
        rss = " - | - | - |"
        if label in memory:
            mib = [statistics.median(m[at] for m in memory[label]) / 1024 for at in MEMORY]
            rss = "".join(f" {value:.1f} |" for value in mib)
        ratio, cpu_ratio = median / wall[spec_list_label], used[label] / used[spec_list_label]
        print(
            f"| `{label}` | {median * 1000:.1f} | {ratio:.2f} | {used[label] * 1000:.0f} | "
            f"{cpu_ratio:.2f} |{rss}"
        )


if __name__ == "__main__":
    main()
