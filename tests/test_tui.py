"""The terminal UI, driven through Textual's pilot and in a real terminal (reference: "The
TUI sidebar shows backlog specs under the Backlog section, filtered to the selected
project's workdir"; a guard pause "stores the blocker on the graph, so … the TUI flags
the graph blocked, until a resume clears it"; interactive hooks enqueue "exactly as if
sent from the promptbuilder")."""

import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select

from canopy.ops import queues, sessions, specs
from canopy.sessions.transcripts import read_turns
from canopy.store.engine import Store
from canopy.tui.app import CanopyApp
from canopy.tui.rows import BLOCKED
from canopy.tui.screens import ConfirmScreen, HelpScreen, ReportScreen
from canopy.tui.sections import Section
from canopy.tui.view import ALL, SECTIONS
from tests import engine
from tests.cli_helpers import canopy_env
from tests.conftest import body, snapshot
from tests.engine import eventually, git_repo, make_graph, make_queue

SIZE = (120, 40)
SCREENSHOT = "CANOPY_TUI_SCREENSHOT"
"""Where the blocked-graph test saves its screen as SVG (docs/tui.md shows it)."""

store = engine.home_store
"""The store of this test's data dir, the one ``canopy tui`` opens."""


def section(app: CanopyApp, name: str) -> Section:
    return app.query_one(f"#{name}", Section)


async def showing(app: CanopyApp, name: str, ids: list[str]) -> None:
    """Wait until the sidebar section ``name`` shows exactly ``ids``, in order."""
    await eventually(lambda: section(app, name).item_ids() == ids, f"{name} showing {ids}")


def spec_in(store: Store, name: str, workdir: Path | None) -> str:
    tag = str(workdir) if workdir is not None else None
    spec_id: str = specs.spec_create(store, name, body(f"{name} summary"), workdir=tag)["id"]
    return spec_id


async def test_the_backlog_shows_exactly_the_selected_projects_standalone_specs(
    store: Store, tmp_path: Path
) -> None:
    app_dir, other_dir = tmp_path / "app", tmp_path / "other"
    login, logout = spec_in(store, "login", app_dir), spec_in(store, "logout", app_dir)
    bound = spec_in(store, "bound", app_dir)
    make_graph(store, app_dir, [{"name": "work", "command": "true"}], specs=[bound])
    elsewhere = spec_in(store, "elsewhere", other_dir)
    untagged = spec_in(store, "untagged", None)

    app = CanopyApp(cwd=str(app_dir / "src"))  # started inside the project: it is selected
    async with app.run_test(size=SIZE):
        await showing(app, "backlog", [login, logout])
        picker: Select[str] = app.query_one("#project", Select)
        assert picker.value == str(app_dir)

        picker.value = str(other_dir)
        await showing(app, "backlog", [elsewhere])
        picker.value = ALL
        await showing(app, "backlog", [login, logout, elsewhere, untagged])

    app = CanopyApp(workdir=str(other_dir), cwd=str(app_dir))  # --workdir wins
    async with app.run_test(size=SIZE):
        await showing(app, "backlog", [elsewhere])


async def test_slash_filters_the_lists_and_escape_clears_it(store: Store, tmp_path: Path) -> None:
    login, logout = spec_in(store, "login", tmp_path), spec_in(store, "logout", tmp_path)
    app = CanopyApp(cwd=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "backlog", [login, logout])
        await pilot.press("slash", *"OUT")
        await showing(app, "backlog", [logout])
        await pilot.press("escape")
        await showing(app, "backlog", [login, logout])
        await pilot.press("question_mark")
        await eventually(lambda: isinstance(app.screen, HelpScreen), "the key help")
        await pilot.press("escape", "q")
    assert app.return_code == 0


def graph_lines(app: CanopyApp) -> dict[str, str]:
    """Each graph's sidebar line."""
    return {graph: line.plain for graph, line in section(app, "graphs").shown}


def flagged_first(app: CanopyApp, graph: str) -> bool:
    """Whether ``graph`` is the first row of Graphs, flagged blocked and all in red."""
    rows = section(app, "graphs").shown
    if not rows or rows[0][0] != graph or not rows[0][1].plain.startswith(BLOCKED):
        return False
    return all("red" in str(span.style) for span in rows[0][1].spans)


@pytest.mark.server
async def test_a_graph_paused_by_the_dirty_tree_guard_is_flagged_until_continue(
    serving: Client, store: Store, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo")
    calm = make_graph(store, repo, [{"name": "work", "command": "true"}], name="calm")
    a, b = spec_in(store, "alpha", repo), spec_in(store, "beta", repo)
    queue = make_queue(store, [a, b], name="nightly")
    dirty_after_a = {"name": "work", "command": f"test {{{{spec_id}}}} != {a} || echo x > x.txt"}
    graph = make_graph(store, repo, [dirty_after_a], name="build")

    app = CanopyApp(cwd=str(repo))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "graphs", [calm, graph])
        await highlight(pilot, app, "graphs", graph)
        await pilot.press("g")  # run over a queue, picked in a dialog
        await pick(pilot, app, "nightly ·")
        await confirm(pilot, app)

        await eventually(lambda: flagged_first(app, graph), "the graph flagged, first, in red")
        page = await eventually(lambda: app.page and "x.txt" in app.page.markdown, "the page")
        assert page
        if shot := os.environ.get(SCREENSHOT):
            await pilot.pause()  # let the page's markdown render
            Path(shot).write_text(app.export_screenshot(title="canopy tui"))

        (repo / "x.txt").unlink()  # clean the tree by hand, then continue (re-check)
        await pilot.press("c")
        await confirm(pilot, app)
        await eventually(lambda: BLOCKED not in graph_lines(app)[graph], "the flag to clear")
        assert list(graph_lines(app)) == [calm, graph]  # back in the store's order
        await eventually(lambda: specs.spec_get(store, b)["status"] == "completed", "beta")
        await eventually(lambda: graph_lines(app)[graph].endswith("completed"), "the settle")

        await highlight(pilot, app, "queues", queue)  # the outcome of its latest run
        latest = "Latest run: **completed** · graph **build** run 1"
        await eventually(lambda: app.page and latest in app.page.markdown, "the queue page")
        assert app.page is not None
        assert "| 1 | alpha | - | completed | completed |" in app.page.markdown
        assert "| 2 | beta | - | completed | completed |" in app.page.markdown


async def highlight(pilot: Pilot[None], app: CanopyApp, name: str, item: str) -> None:
    """Focus a sidebar section and move to ``item`` with the arrow keys."""
    listed = section(app, name)
    listed.focus()
    while listed.highlighted_option is None or listed.highlighted_option.id != item:
        await pilot.press("down")
    await eventually(lambda: app.selected == (SECTIONS[name], item), f"{item} selected")


async def confirm(pilot: Pilot[None], app: CanopyApp) -> None:
    """Answer the confirmation dialog that must have opened: yes."""
    await eventually(lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    await pilot.press("y")


async def pick(pilot: Pilot[None], app: CanopyApp, label: str) -> None:
    """In the pick dialog, move to the choice whose line starts with ``label`` and press
    enter."""
    choices = await eventually(lambda: app.screen.query(OptionList).first(), "the dialog")

    def at_label() -> bool:
        option = choices.highlighted_option
        return option is not None and str(option.prompt).startswith(label)

    while not at_label():
        await pilot.press("down")
    await pilot.press("enter")


@pytest.mark.server
async def test_the_prompt_box_enqueues_with_source_promptbuilder(
    serving: Client, store: Store, tmp_path: Path
) -> None:
    workdir = git_repo(tmp_path / "repo")
    session = sessions.session_new(store, "claude", name="pair", workdir=str(workdir))
    app = CanopyApp(cwd=str(workdir))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "sessions", [session["id"]])
        listed = section(app, "sessions")
        listed.focus()
        await pilot.press("down")
        box = app.query_one("#prompt", Input)
        await eventually(lambda: box.display, "the prompt box")
        box.focus()
        box.value = "FAKE: say hello there"
        await pilot.press("enter")

        transcript = Path(session["transcript_path"])
        turns = await eventually(lambda: read_turns(transcript), "the delivered turn")
        assert [(t["prompt"], t["provenance"]["source"]) for t in turns] == [
            ("FAKE: say hello there", "promptbuilder")
        ]
        await eventually(
            lambda: app.page is not None and "fake agent done" in app.page.markdown,
            "the reply in the session pane",
        )
        assert app.sub_title == "daemon serving"


async def test_a_daemon_that_is_down_is_shown_and_the_store_still_reads(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("TEMPORAL_ADDRESS", f"127.0.0.1:{probe.getsockname()[1]}")
    login = spec_in(store, "login", tmp_path)
    app = CanopyApp(cwd=str(tmp_path))
    async with app.run_test(size=SIZE):
        await showing(app, "backlog", [login])
        await eventually(lambda: app.sub_title.startswith("daemon down: "), "the daemon down")
        assert "cannot reach Temporal" in app.sub_title


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$EDITOR``: a script that replaces the draft with the file it returns."""
    written = tmp_path / "written.md"
    script = tmp_path / "editor.py"
    script.write_text(f"import shutil, sys\nshutil.copy({str(written)!r}, sys.argv[1])\n")
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    monkeypatch.delenv("VISUAL", raising=False)
    return written


async def test_specs_are_edited_and_created_in_the_editor(
    store: Store, tmp_path: Path, editor: Path
) -> None:
    login = spec_in(store, "login", tmp_path)
    app = CanopyApp(cwd=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "backlog", [login])
        section(app, "backlog").focus()
        await pilot.press("down")
        await eventually(lambda: app.selected == ("spec", login), "the spec selected")

        editor.write_text(body("edited summary"))
        await pilot.press("e")
        await eventually(
            lambda: specs.spec_get(store, login)["summary"] == "edited summary", "edit"
        )

        editor.write_text(body("brand new"))
        await pilot.press("plus", *"signup", "enter")
        created = await eventually(
            lambda: [s for s in specs.spec_list(store) if s["name"] == "signup"], "the new spec"
        )
        assert created[0]["workdir"] == str(tmp_path)
        await showing(app, "backlog", [login, created[0]["id"]])

        editor.write_text("not a tagged body")  # refused: one line, the spec unchanged
        await pilot.press("e")
        await eventually(
            lambda: any("text outside tags" in n.message for n in app._notifications),
            "the refusal",
        )
    assert specs.spec_get(store, login)["summary"] == "edited summary"


def members(store: Store, queue: str) -> list[tuple[str, str | None]]:
    return [(m["spec_id"], m["group"]) for m in queues.queue_list(store, queue)["members"]]


async def test_queue_members_are_added_moved_and_removed_and_a_refused_move_changes_nothing(
    store: Store, tmp_path: Path
) -> None:
    a, b, c = (spec_in(store, name, tmp_path) for name in ("alpha", "beta", "gamma"))
    queue = make_queue(store, [], name="nightly")
    queues.queue_add_spec(store, queue, a, "auth")
    queues.queue_add_spec(store, queue, b, "auth")
    app = CanopyApp(cwd=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "queues", [queue])
        section(app, "queues").focus()
        await pilot.press("down")
        await eventually(lambda: app.selected == ("queue", queue), "the queue selected")

        await pilot.press("i")
        await pick(pilot, app, "gamma")
        await pilot.press("enter")  # no group
        await eventually(
            lambda: members(store, queue) == [(a, "auth"), (b, "auth"), (c, None)], "add"
        )

        await pilot.press("m")  # gamma between alpha and beta would split the group
        await pick(pilot, app, "3. gamma")
        await pick(pilot, app, "after alpha")
        await eventually(
            lambda: any("split" in n.message for n in app._notifications), "the refusal"
        )
        assert members(store, queue) == [(a, "auth"), (b, "auth"), (c, None)]

        await pilot.press("m")  # gamma first is fine
        await pick(pilot, app, "3. gamma")
        await pick(pilot, app, "first")
        await eventually(lambda: [m for m, _ in members(store, queue)] == [c, a, b], "the move")

        await pilot.press("x")
        await pick(pilot, app, "2. alpha")
        await pilot.press("y")
        await eventually(lambda: [m for m, _ in members(store, queue)] == [c, b], "the removal")


async def test_the_resume_step_relaunches_a_finished_session_with_its_id_and_name(
    store: Store, tmp_path: Path
) -> None:
    workdir = tmp_path / "app"
    workdir.mkdir()
    pair = sessions.session_new(store, "claude", name="pair", workdir=str(workdir))
    sessions.session_close(store, pair["id"])
    app = CanopyApp(cwd=str(workdir))
    async with app.run_test(size=SIZE) as pilot:
        await eventually(lambda: app.project == str(workdir), "the project")
        await showing(app, "sessions", [])  # live sessions only
        await pilot.press("o")
        await pick(pilot, app, "resume pair")
        await showing(app, "sessions", [pair["id"]])
    resumed = sessions.session_get(store, pair["id"])
    assert (resumed["id"], resumed["name"], resumed["status"]) == (pair["id"], "pair", "live")


def tmux(socket: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run tmux on a server of this test's own (``-L``); its stdout."""
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, env=env, timeout=30
    )
    return done.stdout if done.returncode == 0 else ""


@pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)
async def test_in_a_real_terminal_canopy_tui_draws_the_backlog_and_quits_on_q(
    store: Store, canopy_home: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "app"
    workdir.mkdir()
    spec_in(store, "login page", workdir)
    socket = f"canopy-test-{tmp_path.name}"
    command = shlex.join([sys.executable, "-m", "canopy.cli.main", "tui"])
    env = canopy_env(canopy_home)
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "120",
        "-y",
        "40",
        "-c",
        str(workdir),
        command,
        env=env,
    )
    try:

        def drawn() -> str | None:
            screen = tmux(socket, "capture-pane", "-p", "-t", "tui")
            return screen if "login page" in screen else None

        screen = await eventually(drawn, "the Backlog drawn")
        assert "Backlog (1)" in screen
        tmux(socket, "send-keys", "-t", "tui", "q")
        await eventually(lambda: not tmux(socket, "list-sessions"), "canopy tui to quit on q")
    finally:
        tmux(socket, "kill-server")


async def test_shift_d_shows_the_doctors_report(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same report ``canopy doctor`` prints, for the CLIs this data dir would use."""
    from canopy.ops.doctor import doctor, report_lines
    from tests.model_server.clis import NODE_BIN, isolated_home

    monkeypatch.setenv("PATH", f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}")
    for name, value in isolated_home(tmp_path / "user").items():
        monkeypatch.setenv(name, value)
    (Path(os.environ["CANOPY_HOME"]) / "config.toml").unlink()  # the real CLIs, not the fake
    app = CanopyApp(cwd=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("D")
        await eventually(lambda: isinstance(app.screen, ReportScreen), "the doctor's report", 90)
        assert isinstance(app.screen, ReportScreen)
        assert list(app.screen.lines) == report_lines(doctor(store))
        await pilot.press("escape", "q")
    assert app.return_code == 0


async def test_tab_visits_what_tui_md_says_and_typed_text_changes_nothing(
    store: Store, tmp_path: Path
) -> None:
    """Tab goes picker, lists, prompt box (with a session selected), and focus never rests
    where it cannot be seen. A sentence typed with focus anywhere starts, pauses or edits
    nothing: every action that changes a run asks first, and ``n`` in the text says no."""
    repo = git_repo(tmp_path / "repo")
    graph = make_graph(store, repo, [{"name": "work", "command": "true"}], name="build")
    spec = spec_in(store, "alpha", repo)
    session = sessions.session_new(store, "demo", name="pair", workdir=str(repo))["id"]
    app = CanopyApp(cwd=str(repo))
    async with app.run_test(size=SIZE) as pilot:
        await showing(app, "sessions", [session])
        await highlight(pilot, app, "sessions", session)
        visited = []
        for _ in range(6):
            await pilot.press("tab")
            assert app.focused is not None
            visited.append(app.focused.id)
        assert visited == ["prompt", "project", "backlog", "queues", "graphs", "sessions"]
        await eventually(lambda: app.selected == ("session", session), "the pane follows focus")

        before = snapshot(store)
        for place, item in (("graphs", graph), ("backlog", spec), ("sessions", session)):
            await highlight(pilot, app, place, item)
            await pilot.press(*"Write a TUI note")
            await app.workers.wait_for_complete()  # a dialog a letter asked for is open
            await pilot.pause()
            while len(app.screen_stack) > 1:
                await pilot.press("escape")  # close it, answering no
            assert snapshot(store) == before, place
        await pilot.press("tab")  # from the Sessions list to the prompt box
        assert app.focused is not None and app.focused.id == "prompt"
        await pilot.press(*"Write a TUI note")
        assert app.query_one("#prompt", Input).value == "Write a TUI note"
        assert snapshot(store) == before
