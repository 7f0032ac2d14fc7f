"""``canopy graph logs`` as a user runs it: the CLI in a subprocess, on a graph run by the
dev server whose agents are the fake (Claude-shaped stream-json of its own, and real CLI
streams it replays from ``tests/fixtures/cli-streams``), followed while the node runs."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest
from temporalio.client import Client

from canopy.ops import runs
from canopy.ops.logs import GraphLogs
from canopy.paths import run_log_dir
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from tests.cli_helpers import canopy_env, run_canopy
from tests.conftest import insert, make_specs
from tests.engine import eventually, fake_node, make_graph, node_run_of
from tests.test_graphs import insert_run

STREAMS = Path(__file__).parent / "fixtures" / "cli-streams"
CLAUDE_STREAM = STREAMS / "claude_2.1.332_workspace.log"
CODEX_STREAM = STREAMS / "codex_0.171.0_workspace.log"
COMMAND = "python3 -c 'open('\"'\"'ran.txt'\"'\"', '\"'\"'w'\"'\"').write('\"'\"'ok'\"'\"')'"


class Follower:
    """``canopy graph logs ARGS`` running, its stdout lines collected as they arrive.

    Each pipe has one reader, a thread of its own: ``communicate()`` would read stdout
    too, and whatever it read first would be missing from ``lines``.
    """

    def __init__(self, home: Path, server: Client, *args: str) -> None:
        target = server.service_client.config.target_host
        self.process = subprocess.Popen(
            [sys.executable, "-m", "canopy.cli.main", "graph", "logs", *args],
            env=canopy_env(home, TEMPORAL_ADDRESS=target),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(pipe, into), daemon=True)
            for pipe, into in (
                (self.process.stdout, self.lines),
                (self.process.stderr, self._stderr),
            )
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe: IO[str] | None, into: list[str]) -> None:
        assert pipe is not None
        for line in pipe:
            into.append(line.removesuffix("\n"))

    def shows(self, line: str) -> bool:
        return line in self.lines

    async def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Its exit status and stderr, once it has exited by itself and both are read."""
        try:
            await asyncio.to_thread(self.process.wait, timeout)
        finally:
            self.process.kill()
        for reader in self._readers:
            await asyncio.to_thread(reader.join, timeout)
        return self.process.returncode, "".join(f"{line}\n" for line in self._stderr)


def in_order(lines: list[str], wanted: list[str]) -> bool:
    """Whether ``wanted`` appear in ``lines`` in this order (others may come between)."""
    rest = iter(lines)
    return all(any(line == want for line in rest) for want in wanted)


@pytest.mark.server
async def test_follow_prints_each_node_as_it_runs_and_exits_when_the_run_settles(
    serving: Client, home_store: Store, repo: Path, canopy_home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    (spec,) = make_specs(home_store, "Login page")
    implement = f"FAKE: say Reading the spec.\nFAKE: replay {CLAUDE_STREAM}\nFAKE: wait-for {gate}"
    nodes = [
        fake_node("implement", f"{implement}\nFAKE: usage 1200 340 5000 0.25"),
        fake_node("review", f"FAKE: replay {CODEX_STREAM}", platform="codex"),
        {"name": "check", "command": "echo checked"},
    ]
    graph = make_graph(home_store, repo, nodes, specs=[spec])
    await runs.graph_run(home_store, graph)
    follower = Follower(canopy_home, serving, "build", "--follow")
    stopped = Follower(canopy_home, serving, "build", "--follow", "--spec", spec[:9])
    try:
        running = f"── implement · Login page ({spec}) · visit 1 · claude · running"
        said = [running, "Reading the spec.", "✎ Write app/x.py", f"$ {COMMAND}"]
        await eventually(lambda: in_order(follower.lines, said), "the node's output, rendered")
        assert node_run_of(home_store, spec, "running") is not None, "the node still runs"
        assert follower.process.poll() is None

        await eventually(lambda: stopped.shows(running), "a second follower's header")
        stopped.process.send_signal(signal.SIGINT)
        assert await stopped.finish() == (130, "")  # quietly: no traceback, no "Aborted!"
    finally:
        gate.touch()
        code, stderr = await follower.finish()
    assert (code, stderr) == (0, "")
    assert in_order(
        follower.lines,
        [
            *said,
            "Wrote app/x.py and ran it.",
            "fake agent done",
            "Σ 1.2k in · 340 out · 5k cache read · $0.2500 · 1 turn · fake-model",
            "── implement: succeeded",
            "",
            "✎ add /tmp/tmp54hkvvhh/work/app/x.py",  # the recording's workdir, not this run's
            f"$ {COMMAND}",
            "fake agent done",
            "Σ 30 in · 15 out · 0 cache read · 2 turns",
            "",
            "checked",
        ],
    ), follower.lines
    headers = [line for line in follower.lines if line.startswith("── ") and "·" in line]
    assert [header.split(" · ")[0] for header in headers] == [
        "── implement",
        "── review",
        "── check",
    ]

    check = run_canopy(canopy_home, "graph", "logs", "build", "--node", "check")
    header = f"── check · Login page ({spec}) · visit 1 · command · succeeded"
    assert (check.code, check.stdout, check.stderr) == (0, f"{header}\nchecked\n", "")
    review = run_canopy(canopy_home, "graph", "logs", "build", "--node", "review", "--json")
    (record,) = [json.loads(line) for line in review.stdout.splitlines()]
    assert (record["platform"], record["status"]) == ("codex", "succeeded")
    assert record["lines"][:2] == ["✎ add /tmp/tmp54hkvvhh/work/app/x.py", f"$ {COMMAND}"]
    raw = run_canopy(canopy_home, "graph", "logs", "build", "--node", "review", "--raw")
    assert CODEX_STREAM.read_text() in raw.stdout


def test_each_look_reads_on_from_the_last_one_as_node_runs_start_and_end(
    canopy_home: Path, home_store: Store, repo: Path
) -> None:
    """What ``--follow`` reads, look by look, without a server: a node run's lines as they
    are written (a line still being written waits for its newline), its last ones once the
    store says it ended, and each node run after it, its header (``first``) once."""
    (spec,) = make_specs(home_store, "Login page")
    nodes = [{"name": name, "command": "true"} for name in ("implement", "review", "check")]
    graph = make_graph(home_store, repo, nodes, specs=[spec])
    run_id = insert_run(home_store, graph, 1, "running")
    logs = GraphLogs(home_store, "build")

    def launch(node: str) -> Path:
        with home_store.transaction() as rows:
            (row,) = rows(
                "INSERT INTO node_runs (run_id, spec_id, node, visit, status, started_at)"
                " VALUES (:run_id, :spec_id, :node, 1, 'running', :now) RETURNING id",
                {"run_id": run_id, "spec_id": spec, "node": node, "now": utcnow()},
            )
        return run_log_dir(run_id, "nodes", row["id"]) / "output.log"

    def end(node: str, log: Path) -> None:
        with home_store.transaction() as rows:
            rows(
                "UPDATE node_runs SET status = 'succeeded', log_path = :log, ended_at = :now"
                " WHERE node = :node",
                {"log": str(log), "now": utcnow(), "node": node},
            )

    def look(**kwargs: bool) -> list[tuple[str, list[str], bool, bool]]:
        return [(n.node_run.node, n.lines, n.first, n.last) for n in logs.look(**kwargs)]

    assert look() == []
    implement = launch("implement")
    assert look() == [("implement", [], True, False)]  # its process has not started yet
    implement.parent.mkdir(parents=True)
    implement.write_text("one\ntw")
    assert look() == [("implement", ["one"], False, False)]
    with implement.open("a") as log:
        log.write("o\nthree\nfour")
    assert look() == [("implement", ["two", "three"], False, False)]
    end("implement", implement)
    review = launch("review")
    assert look() == [("implement", ["four"], False, True), ("review", [], True, False)]
    review.parent.mkdir(parents=True)
    review.write_text("looked\n")
    end("review", review)
    check = launch("check")
    check.parent.mkdir(parents=True)
    check.write_text("checked\n")
    end("check", check)
    assert look() == [("review", ["looked"], False, True), ("check", ["checked"], True, True)]
    assert look() == look(to_the_end=True) == []


def test_a_graph_that_never_ran_says_so(canopy_home: Path, home_store: Store, repo: Path) -> None:
    make_graph(home_store, repo, [{"name": "check", "command": "true"}])
    result = run_canopy(canopy_home, "graph", "logs", "build", "--follow")
    assert (result.code, result.stdout, result.stderr) == (0, "graph build has no runs yet\n", "")
    refused = run_canopy(canopy_home, "graph", "logs", "build", "--spec", "spec-nope")
    assert (refused.code, refused.stderr) == (1, "error: no spec matches 'spec-nope'\n")


def test_logs_are_read_only_under_the_logs_dir_and_escaped_when_printed(
    canopy_home: Path, home_store: Store, repo: Path, tmp_path: Path
) -> None:
    """A path in the store is not trusted to point anywhere; what an agent printed is
    not trusted to be shown as it is (an escape sequence would act on the terminal)."""
    (spec,) = make_specs(home_store, "Login page")
    graph = make_graph(home_store, repo, [{"name": "check", "command": "true"}], specs=[spec])
    run_id = insert_run(home_store, graph, 1, "completed")
    secret = tmp_path / "secret.log"
    secret.write_text("not for graph logs\n")
    inside = run_log_dir(run_id, "nodes", 2) / "output.log"
    inside.parent.mkdir(parents=True)
    inside.write_text("\x1b]0;pwned\x07 hello\n")
    elsewhere = run_log_dir(run_id, "nodes", 3) / "output.log"
    recorded = [(secret, None), (inside, None), (None, "elsewhere"), (None, None)]
    with home_store.transaction() as rows:
        for node_run_id, (path, host) in enumerate(recorded, start=1):
            insert(
                rows,
                "node_runs",
                id=node_run_id,
                run_id=run_id,
                spec_id=spec,
                node="check",
                visit=node_run_id,
                status="succeeded" if path else "failed",
                log_path=str(path) if path else None,
                host=host,
                started_at=utcnow(),
            )
    found = GraphLogs(home_store, "build").look(to_the_end=True)
    assert [piece.lines for piece in found] == [
        [f"(not shown: {secret} is not under {canopy_home / 'logs'})"],
        ["\x1b]0;pwned\x07 hello"],
        [f"(its log is on elsewhere: {elsewhere})"],  # it ran on another machine
        ["(no output)"],  # its process never started
    ]
    shown = run_canopy(canopy_home, "graph", "logs", "build").stdout
    assert "\\x1b]0;pwned\\x07 hello\n" in shown and "\x1b" not in shown
    nothing = run_canopy(canopy_home, "graph", "logs", "build", "--node", "test")
    assert nothing.stdout == "run 1 of build has no node runs of node test\n"
