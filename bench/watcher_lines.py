"""What reading an agent's output costs the node activity, per line, per platform.

Every line a running agent prints is taken in by :class:`OutputWatcher` within a second:
its session id is read, and (since the real-agents work) whether it is a retry notice or
progress. This times the watcher over a long real-shaped log of each platform's harness
samples, against the baseline of reading the session id alone, in the same run, and
prints the ratio.

    .venv/bin/python -m bench.watcher_lines [--lines 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from canopy.activities.detached import OutputWatcher
from canopy.platforms import Platform, get_platform

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "harness-samples"
SHAPES = {
    "claude": "claude_ok_2.1.83_issue38673.jsonl",
    "codex": "codex_ok_captured_53143053056.jsonl",
    "gemini": "gemini_tool_use_fixture_52212130363.jsonl",
}


def log_of(platform: str, lines: int, directory: Path) -> Path:
    """A log of ``lines`` lines repeating the platform's real sample, each line made
    unique (a JSON event gets a counter field), as a real log's lines are."""
    sample = (SAMPLES / SHAPES[platform]).read_text().splitlines()
    path = directory / f"{platform}.log"
    repeated = (sample * (lines // len(sample) + 1))[:lines]
    unique = [
        f'{{"bench_line": {n}, {line.lstrip()[1:]}' if line.lstrip().startswith("{") else line
        for n, line in enumerate(repeated)
    ]
    path.write_text("\n".join(unique) + "\n")
    return path


def full(path: Path, platform: Platform) -> float:
    """Seconds for the watcher to take in the whole log, as the activity does."""
    started = time.perf_counter()
    watcher = OutputWatcher(path, platform, None)
    watcher.poll()
    watcher.finish()
    return time.perf_counter() - started


def session_ids_only(path: Path, platform: Platform) -> float:
    """The baseline: the same lines, only their session id read (the watcher before)."""
    started = time.perf_counter()
    with path.open("rb") as log:
        for raw in log:
            platform.session_id_from_line(raw.decode("utf-8", errors="replace"))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for name in SHAPES:
            platform = get_platform(name)
            path = log_of(name, args.lines, Path(scratch))
            base, taken = [], []
            for _ in range(args.runs):  # interleaved, so background load hits both alike
                base.append(session_ids_only(path, platform))
                taken.append(full(path, platform))
            b, t = statistics.median(base), statistics.median(taken)
            per_line = t / args.lines * 1e6
            print(f"{name:7} {per_line:6.1f} µs a line; {t / b:4.2f}x reading session ids alone")


if __name__ == "__main__":
    main()
