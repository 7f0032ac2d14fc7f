"""Per-message cost of session delivery, against running the same harness turn directly.

Usage: ``make bench-delivery`` or ``.venv/bin/python -m bench.delivery_overhead
[--messages N] [--keep]``.

In a scratch ``CANOPY_HOME`` with free ports it runs ``canopy up`` (embedded Temporal dev
server plus worker) and opens one session on a user-defined platform whose "harness" is
``/bin/sh -c true`` (so the turn itself costs next to nothing), queues N messages through
the store, wakes the session's delivery workflow once and times until the last message
is delivered. The baseline, measured in the same run before and after (so background load
hits both alike), runs the same argv N times in a loop. The difference per message is what
delivery costs: the workflow's two activities, the detached turn runner and its lock
protocol, the transcript append and the store writes. It also checks that every message
was delivered once, in order.
"""

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.dispatch_overhead import Scratch, daemons_up, make_repo, make_scratch

PLATFORM = "bench-true"
HARNESS_ARGV = ["/bin/sh", "-c", "true", "sh", "{prompt}"]


def configure_platform(scratch: Scratch) -> None:
    """The no-op harness as a user-defined platform in the scratch config file."""
    argv = ", ".join(f'"{part}"' for part in HARNESS_ARGV)
    (scratch.home / "config.toml").write_text(f"[platforms.{PLATFORM}]\nargv = [{argv}]\n")


def baseline_seconds(repo: Path, count: int) -> float:
    """N direct runs of the harness argv in the workdir."""
    argv = [part.replace("{prompt}", "message") for part in HARNESS_ARGV]
    started = time.perf_counter()
    for _ in range(count):
        subprocess.run(argv, cwd=repo, check=True)
    return time.perf_counter() - started


async def delivery_seconds(scratch: Scratch, count: int) -> float:
    """Queue N messages, wake the session once, and time until all are delivered in order."""
    os.environ.update(CANOPY_HOME=str(scratch.home), TEMPORAL_ADDRESS=scratch.address)
    from canopy.ops import sessions
    from canopy.ops.session_wake import wake_session
    from canopy.sessions.transcripts import read_turns
    from canopy.store.engine import open_store
    from canopy.temporal import client as temporal_client

    store = open_store()
    session = sessions.session_new(store, PLATFORM, name="bench", workdir=str(scratch.repo))
    client = await temporal_client.connect()
    started = time.perf_counter()
    queued = [sessions.session_send(store, "bench", f"message {n}")["id"] for n in range(count)]
    await wake_session(client, session["id"])
    while sessions.session_get(store, "bench")["queued_messages"]:
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - started
    turns = read_turns(Path(session["transcript_path"]))
    delivered = [turn["message_id"] for turn in turns if turn["status"] == "delivered"]
    if delivered != queued:
        raise RuntimeError(f"{len(delivered)} of {count} delivered in order; expected all")
    return elapsed


def main() -> None:
    """Measure, print a markdown table, exit 1 if anything was not delivered."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=100, help="messages to deliver")
    parser.add_argument("--keep", action="store_true", help="leave the scratch dir behind")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="canopy-delivery-"))
    print(f"scratch dir {root}", file=sys.stderr)
    try:
        scratch = make_scratch(root)
        make_repo(scratch.repo)
        configure_platform(scratch)
        before = baseline_seconds(scratch.repo, options.messages)
        with daemons_up(scratch):
            engine = asyncio.run(delivery_seconds(scratch, options.messages))
        after = baseline_seconds(scratch.repo, options.messages)
    finally:
        if options.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    count = options.messages
    baseline = (before + after) / 2
    per_message, per_run = engine / count * 1000, baseline / count * 1000
    print("| measure | value |\n| --- | ---: |")
    print(f"| messages | {count} |")
    print(f"| baseline: direct run of the harness argv | {per_run:.1f} ms each |")
    print(f"| delivery: queued → delivered, per message | {per_message:.1f} ms |")
    print(f"| overhead per message | {per_message - per_run:.1f} ms |")
    print(f"| ratio to baseline | {per_message / per_run:.1f} x |")
    print(f"| throughput | {count / engine:.2f} messages/s |")


if __name__ == "__main__":
    main()
