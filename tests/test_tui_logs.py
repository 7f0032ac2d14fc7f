"""The TUI's log view (``l`` on a graph): what ``canopy graph logs --follow`` prints, in a
view of its own, kept current while the node runs. Driven through Textual's pilot on a run
whose node runs and log are written straight into the store and the data dir, so each
new line is one the test wrote."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Label, Log

from canopy.paths import run_log_dir
from canopy.store.engine import Store
from canopy.timefmt import utcnow
from canopy.tui.app import CanopyApp
from canopy.tui.logview import LogScreen
from tests.conftest import make_specs, snapshot, update
from tests.engine import eventually, make_graph
from tests.test_graphs import insert_run
from tests.test_tui import SIZE, highlight, showing


def launch(store: Store, run_id: str, spec: str, node: str) -> Path:
    """A running node run of ``node`` (a command node), and where its log goes."""
    with store.transaction() as rows:
        (row,) = rows(
            "INSERT INTO node_runs (run_id, spec_id, node, visit, status, started_at)"
            " VALUES (:run_id, :spec_id, :node, 1, 'running', :now) RETURNING id",
            {"run_id": run_id, "spec_id": spec, "node": node, "now": utcnow()},
        )
    log = run_log_dir(run_id, "nodes", row["id"]) / "output.log"
    log.parent.mkdir(parents=True)
    return log


def end(store: Store, log: Path) -> None:
    """The node run writing ``log`` succeeded."""
    with store.transaction() as rows:
        (row,) = rows("SELECT id FROM node_runs WHERE status = 'running'", {})
        ended = {"status": "succeeded", "exit_code": 0, "log_path": str(log), "ended_at": utcnow()}
        update(rows, "node_runs", row["id"], **ended)


async def open_log_view(pilot: Pilot[None], app: CanopyApp, graph: str) -> LogScreen:
    """Highlight ``graph`` on the Graphs list and press ``l``; the log view it opens."""
    await showing(app, "graphs", [graph])
    await highlight(pilot, app, "graphs", graph)
    await pilot.press("l")
    return await eventually(
        lambda: app.screen if isinstance(app.screen, LogScreen) else None, "the log view"
    )


async def test_l_shows_the_latest_runs_log_live_escaped_and_escape_closes_it(
    canopy_home: Path, home_store: Store, repo: Path
) -> None:
    (spec,) = make_specs(home_store, "Login page")
    nodes = [{"name": name, "command": "true"} for name in ("check", "report")]
    graph = make_graph(home_store, repo, nodes, specs=[spec])
    run_id = insert_run(home_store, graph, 1, "running")
    check = launch(home_store, run_id, spec, "check")
    numbered = [f"line {n}" for n in range(1, 61)]  # more than the view holds: it scrolls
    check.write_text("".join(f"{line}\n" for line in numbered) + "\x1b]0;pwned\x07 hello\n")

    app = CanopyApp(cwd=str(repo))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_log_view(pilot, app, graph)
        log = screen.query_one(Log)
        header = f"── check · Login page ({spec}) · visit 1 · command · running"
        # The escape sequence the node printed is shown as its characters, never sent.
        said = [header, *numbered, "\\x1b]0;pwned\\x07 hello"]
        await eventually(lambda: list(log.lines[: len(said)]) == said, "the lines, escaped")
        assert not any("\x1b" in line for line in log.lines)
        assert str(screen.query_one("#log-title", Label).content) == "Logs of build, run 1"
        await eventually(lambda: 0 < log.scroll_y == log.max_scroll_y, "the view at the end")

        with check.open("a") as output:
            output.write("written later\nhalf a li")
        await eventually(lambda: log.lines[-2:] == ["written later", ""], "a new line, live")
        with check.open("a") as output:
            output.write("ne\n")
        await eventually(lambda: "half a line" in log.lines, "a line once it is whole")

        end(home_store, check)
        report = launch(home_store, run_id, spec, "report")
        report.write_text("reported\n")
        await eventually(lambda: "reported" in log.lines, "the next node run, live")
        assert list(log.lines[len(said) :]) == [
            "written later",
            "half a line",
            "── check: succeeded",
            "",
            f"── report · Login page ({spec}) · visit 1 · command · running",
            "reported",
            "",
        ]
        assert log.scroll_y == log.max_scroll_y, "it follows the end"

        before = snapshot(home_store)
        await pilot.press(*"gcnkpsra Write a TUI note q", "tab", "enter")
        await app.workers.wait_for_complete()
        assert app.screen is screen, "typing opened nothing, and did not close the view"
        assert app.focused is log, "tab stays on the log"
        assert snapshot(home_store) == before

        await pilot.press("escape")
        await eventually(lambda: not isinstance(app.screen, LogScreen), "the view to close")
        assert not screen.looking, "its looks stopped"
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_graph_that_never_ran_says_so_until_its_first_run_starts(
    home_store: Store, repo: Path
) -> None:
    (spec,) = make_specs(home_store, "Login page")
    graph = make_graph(home_store, repo, [{"name": "check", "command": "true"}], specs=[spec])
    app = CanopyApp(cwd=str(repo))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_log_view(pilot, app, graph)
        title = screen.query_one("#log-title", Label)
        await eventually(lambda: str(title.content) == "graph build has no runs yet", "its title")

        run_id = insert_run(home_store, graph, 1, "running")  # a first run, started meanwhile
        launch(home_store, run_id, spec, "check").write_text("first\n")
        log = screen.query_one(Log)
        await eventually(lambda: "first" in log.lines, "the first run's lines")
        assert str(title.content) == "Logs of build, run 1"
