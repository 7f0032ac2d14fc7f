"""``canopy tui``: the Textual application.

A sidebar (project picker, Backlog, Queues, Graphs, Sessions) and a detail pane for the
item highlighted there. Every read and every action is an operation from
:mod:`canopy.ops`, run on a worker thread exactly as a CLI command runs it (async ones
under their own ``asyncio.run``), so the screen never waits on the store or Temporal.
The view re-reads about once a second; rows that did not change are not redrawn.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, Input, Label, OptionList, Select, Static

from canopy.errors import Refused, unexpected_error_line
from canopy.ops import queues, specs
from canopy.store import direct
from canopy.tui import reads
from canopy.tui.editor import NEW_SPEC_BODY, edit
from canopy.tui.rows import Listing
from canopy.tui.screens import AskScreen, ConfirmScreen, HelpScreen, PickScreen, ReportScreen
from canopy.tui.sections import Section
from canopy.workdir import normalize_workdir

if TYPE_CHECKING:
    from canopy.store.engine import Store
    from canopy.store.queries import Rows

REFRESH_SECONDS = 1.0
DAEMON_CHECK_SECONDS = 5.0
"""How often the header's daemon state is checked (each check connects to Temporal)."""
ALL = "(all)"
"""The project picker's value for every project."""
SECTIONS: dict[str, reads.Kind] = {
    "backlog": "spec",
    "queues": "queue",
    "graphs": "graph",
    "sessions": "session",
}
"""Each sidebar section's widget id and the kind of item it lists."""
HEADINGS = {"backlog": "Backlog", "queues": "Queues", "graphs": "Graphs", "sessions": "Sessions"}
GRAPH_ACTIONS = frozenset(
    {"continue_run", "run_from_node", "skip_next", "pause", "stop", "reset", "toggle_dirty"}
)
"""Actions on the selected graph: offered only while a graph is selected."""
QUEUE_ACTIONS = frozenset({"queue_add", "queue_remove", "queue_move", "queue_group"})
"""Actions on the selected queue's members: offered only while a queue is selected."""


class CanopyApp(App[None]):
    """The Canopy terminal UI."""

    TITLE = "Canopy"
    CSS = """
    #sidebar { width: 44; border-right: solid $primary-darken-2; }
    #sidebar > Label { text-style: bold; background: $boost; width: 100%; padding: 0 1; }
    Section { height: auto; max-height: 8; border: none; padding: 0; }
    #backlog { height: 1fr; max-height: 100%; min-height: 3; }
    #main { width: 1fr; }
    #page-scroll { height: 1fr; }
    #prompt { display: none; }
    #prompt.shown { display: block; }
    #filter { display: none; }
    #filter.shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("g", "run_graph", "Run"),
        Binding("c", "continue_run", "Continue"),
        Binding("n", "run_from_node", "From node"),
        Binding("k", "skip_next", "Skip"),
        Binding("p", "pause", "Pause"),
        Binding("s", "stop", "Stop"),
        Binding("r", "reset", "Reset"),
        Binding("a", "toggle_dirty", "Dirty ok"),
        Binding("e", "edit_spec", "Edit spec"),
        Binding("plus", "new_spec", "New spec", key_display="+"),
        Binding("i", "queue_add", "Add to queue"),
        Binding("x", "queue_remove", "Remove"),
        Binding("m", "queue_move", "Move"),
        Binding("t", "queue_group", "Group"),
        Binding("o", "new_session", "Session"),
        Binding("f", "toggle_finished", "Finished"),
        Binding("D", "doctor", "Doctor"),
    ]
    HELP_EXTRA = (
        ("tab / shift+tab", "move between the project picker, the lists and the prompt box"),
        ("up / down", "move in a list; the detail pane follows"),
        ("enter", "in the prompt box: send the message to the session"),
        ("escape", "close a dialog or the filter"),
    )

    def __init__(self, workdir: str | None = None, cwd: str | None = None) -> None:
        """``workdir`` (``--workdir``) selects that project; otherwise the project the
        current directory ``cwd`` lies in, else all projects."""
        super().__init__()
        self.start_workdir = workdir
        self.cwd = cwd or os.getcwd()
        self.project: str | None = None
        self.started = False
        self.finished_sessions = False
        self.selected: tuple[reads.Kind, str] | None = None
        self.page: reads.Page | None = None
        self.filter_text = ""
        self.project_choices = [ALL]
        self.busy: set[str] = set()
        self._store: Store | None = None

    # ----------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="sidebar"):
                yield Select([(ALL, ALL)], value=ALL, allow_blank=False, id="project")
                yield Input(placeholder="filter the focused list", id="filter")
                for section_id, heading in HEADINGS.items():
                    yield Label(heading, id=f"{section_id}-heading")
                    yield Section(id=section_id)
            with Vertical(id="main"):
                # Not focusable: focus there was invisible, and typing there ran keys
                with VerticalScroll(id="page-scroll", can_focus=False):
                    yield Static("Select a spec, queue, graph or session.", id="page-hint")
                yield Input(placeholder="message to this session (enter sends)", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#backlog", Section).focus()
        self.set_interval(REFRESH_SECONDS, self.refresh_view)
        self.set_interval(DAEMON_CHECK_SECONDS, self.check_daemon)
        self.refresh_view()

    def check_daemon(self) -> None:
        """Ask whether a daemon serves, unless still asking (once the Backlog is shown)."""
        if self.started and "daemon" not in self.busy:
            self.busy.add("daemon")
            self.read_daemon()

    @work(thread=True, group="daemon")
    def read_daemon(self) -> None:
        """Show in the header whether a daemon serves: runs and messages wait without."""
        try:
            problem = reads.read_daemon()
            state = "daemon serving" if problem is None else f"daemon down: {problem}"
        except Exception as error:
            state = f"daemon unknown: {unexpected_error_line(error)}"
        self.call_from_thread(self.show_daemon, state)

    def show_daemon(self, state: str) -> None:
        """The daemon's state, in the header."""
        self.sub_title = state
        self.busy.discard("daemon")

    # ----------------------------------------------------------------- reads

    def store(self) -> Store:
        """The store the CLI would open (``CANOPY_HOME`` / ``CANOPY_DB_URL``), opened on
        first use, on a worker thread. SQLAlchemy loads then, after the first paint."""
        if self._store is None:
            from canopy.store.engine import open_store

            self._store = open_store()
        return self._store

    @contextmanager
    def portable(self) -> Iterator[Store | Rows]:
        """Where the operations in portable SQL read: on SQLite a runner on its own
        ``sqlite3`` connection, in one transaction (as the CLI's fast lane reads), else
        the store (Postgres, or a store that must first be created or migrated)."""
        with direct.transaction() as rows:
            yield self.store() if rows is None else rows

    def refresh_view(self) -> None:
        """Re-read what is shown, each part unless it is still being read. At start the
        Backlog comes alone (its first read also chooses the project); graphs, sessions
        and pages follow once it is on screen, so loading their operations does not
        hold up the first paint."""
        if "backlog" not in self.busy:
            self.busy.add("backlog")
            self.read_backlog(self.project, self.filter_text, not self.started)
        if not self.started:
            return
        if "activity" not in self.busy:
            self.busy.add("activity")
            self.read_activity(self.project, self.filter_text, self.finished_sessions)
        if self.selected is not None and "page" not in self.busy:
            self.busy.add("page")
            self.read_page(*self.selected)

    def reread_sidebar(self) -> None:
        """Read the sidebar again now, whatever reads are under way (their answers, for
        what was shown before, are dropped)."""
        self.busy -= {"backlog", "activity"}
        self.refresh_view()

    @work(thread=True, group="backlog")
    def read_backlog(self, project: str | None, text: str, first: bool) -> None:
        """Read the project picker's choices, the Backlog and the queues, filtered by
        ``text``; the first read also chooses the project to start on."""
        try:
            with self.portable() as source:
                if first:
                    project = reads.start_project(source, self.start_workdir, self.cwd)
                sidebar = reads.read_backlog(source, project, text)
            self.call_from_thread(self.show_sidebar, project, text, sidebar, first)
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
        finally:
            self.call_from_thread(self.done_reading, "backlog")

    @work(thread=True, group="activity")
    def read_activity(self, project: str | None, text: str, finished: bool) -> None:
        """Read the graphs and sessions of the project, filtered by ``text``."""
        try:
            activity = reads.read_activity(self.store(), project, finished, text)
            self.call_from_thread(self.show_sidebar, project, text, activity, False)
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
        finally:
            self.call_from_thread(self.done_reading, "activity")

    @work(thread=True, group="page")
    def read_page(self, kind: reads.Kind, item_id: str) -> None:
        """Read the page of the selected item."""
        try:
            if kind in reads.PORTABLE_PAGES:
                with self.portable() as source:
                    page = reads.read_page(source, kind, item_id)
            else:
                page = reads.read_page(self.store(), kind, item_id)
            self.call_from_thread(self.show_page, page)
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
        finally:
            self.call_from_thread(self.done_reading, "page")

    def done_reading(self, what: str) -> None:
        """A read of ``what`` (``backlog``, ``activity``, ``page``) ended: the next refresh
        may start one."""
        self.busy.discard(what)

    def show_read_error(self, error: Exception) -> None:
        """A read that failed: one line, the way the CLI would say it."""
        line = str(error) if isinstance(error, Refused) else unexpected_error_line(error)
        self.notify(line, severity="error", timeout=3)

    def show_sidebar(
        self, project: str | None, text: str, sidebar: reads.Sidebar, first: bool
    ) -> None:
        """Show a sidebar read, unless the project or the filter ``text`` changed since it
        was asked for. The first read also chose the project to start on, unless one was
        picked meanwhile."""
        adopt = first and not self.started
        if adopt:
            self.started, self.project = True, project
            self.call_after_refresh(self.refresh_view)  # graphs and sessions, once painted
            self.call_after_refresh(self.check_daemon)
        elif project != self.project or text != self.filter_text:
            return
        if sidebar.projects is not None:
            self._show_projects(sidebar.projects, adopt)
        for section_id in SECTIONS:
            listing: Listing | None = getattr(sidebar, section_id)
            if listing is None:
                continue
            self.query_one(f"#{section_id}", Section).show(listing)
            label = f"{HEADINGS[section_id]} ({listing.total})"
            heading = self.query_one(f"#{section_id}-heading", Label)
            if str(heading.content) != label:
                heading.update(label)

    def _show_projects(self, projects: list[str], adopt: bool) -> None:
        """Offer ``projects`` in the picker; it shows the selected project when the app
        chose it (at start) or when its choices changed, and is left to the user else."""
        wanted = [ALL, *projects]
        if self.project is not None and self.project not in wanted:
            wanted.append(self.project)
        if self.project_choices == wanted and not adopt:
            return
        self.project_choices = wanted
        picker: Select[str] = self.query_one("#project", Select)
        with picker.prevent(Select.Changed):
            picker.set_options((value, value) for value in wanted)
            picker.value = ALL if self.project is None else self.project

    def show_page(self, page: reads.Page) -> None:
        """Show a page read, if its item is still the selected one and it changed (the
        markdown renders in the background). The first page makes the Markdown widget:
        importing it loads markdown-it, which the first paint does not wait for."""
        if self.selected != (page.kind, page.item_id) or self.page == page:
            return
        self.page = page
        from textual.widgets import Markdown

        shown = self.query("#page")
        if shown:
            shown.first(Markdown).update(page.markdown)
            return
        self.query_one("#page-hint").remove()
        self.query_one("#page-scroll").mount(Markdown(page.markdown, id="page"))

    # ----------------------------------------------------------------- selection

    def on_select_changed(self, event: Select.Changed) -> None:
        """Another project picked: re-read the sidebar for it. A change the picker
        reports for the value it already had (its first value, at mount) or no longer has
        is not a pick."""
        picked = None if event.value in (ALL, Select.BLANK) else str(event.value)
        if picked == self.project or event.value != event.select.value:
            return
        self.started = True  # a first read still under way no longer picks the project
        self.project = picked
        self.reread_sidebar()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """The detail pane follows the highlighted row."""
        if isinstance(event.option_list, Section) and event.option.id is not None:
            self.select(SECTIONS[str(event.option_list.id)], event.option.id)

    def on_descendant_focus(self, event: Any) -> None:
        """Focusing a list selects its highlighted row (its first, if none is yet), so the
        detail pane always shows what the focused list points at."""
        widget = event.widget
        if not isinstance(widget, Section):
            return
        if widget.highlighted_option is None and widget.option_count:
            widget.highlighted = 0  # highlighting selects it, as moving in the list does
            return
        if widget.highlighted_option is not None:
            option_id = widget.highlighted_option.id
            if option_id is not None:
                self.select(SECTIONS[str(widget.id)], option_id)

    def select(self, kind: reads.Kind, item_id: str) -> None:
        """Make ``item_id`` the selected item and read its page."""
        if self.selected == (kind, item_id):
            return
        self.selected = (kind, item_id)
        self.query_one("#prompt", Input).set_class(kind == "session", "shown")
        self.busy.discard("page")
        self.refresh_view()
        self.refresh_bindings()

    def selected_graph(self) -> str | None:
        """The selected graph's id, if a graph is selected."""
        if self.selected is not None and self.selected[0] == "graph":
            return self.selected[1]
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Graph actions are offered only while a graph is selected, editing a spec only
        while a spec is."""
        if action in GRAPH_ACTIONS or action == "run_graph":
            return self.selected_graph() is not None
        if action == "edit_spec":
            return self.selected is not None and self.selected[0] == "spec"
        if action in QUEUE_ACTIONS:
            return self.selected is not None and self.selected[0] == "queue"
        return True

    # ----------------------------------------------------------------- actions

    @work(thread=True, group="action")
    def act(self, doing: str, action: str, *args: object) -> None:
        """Run the action ``action`` of :mod:`canopy.tui.steering` with ``args`` on a
        worker thread; say how it went, then re-read. That module is imported here, on
        the first action, not when the app starts."""
        try:
            from canopy.tui import steering

            result = getattr(steering, action)(self.store(), *args)
        except Exception as error:
            line = str(error) if isinstance(error, Refused) else unexpected_error_line(error)
            self.call_from_thread(self.notify, line, title=doing, severity="error")
            return
        said = [f"{key}: {result[key]}" for key in ("status", "note", "warning") if result.get(key)]
        if "members" in result:
            said.append(f"{len(result['members'])} member(s)")
        self.call_from_thread(self.notify, "; ".join(said) or "done", title=doing)
        self.call_from_thread(self.refresh_view)

    def _confirmed(self, question: str, doing: str, action: str, *args: object) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.act(doing, action, *args)

        self.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, group="doctor", exclusive=True)
    def action_doctor(self) -> None:
        """``canopy doctor``'s report in a dialog: will the agent CLIs in use run. It runs
        the CLIs (seconds), on a worker thread."""
        from canopy.ops.doctor import doctor, report_lines

        self.call_from_thread(self.notify, "checking the agent CLIs…", title="doctor")
        try:
            lines = report_lines(doctor(self.store()))
        except Exception as error:
            line = str(error) if isinstance(error, Refused) else unexpected_error_line(error)
            self.call_from_thread(self.notify, line, title="doctor", severity="error")
            return
        self.call_from_thread(self.push_screen, ReportScreen("Doctor", lines))

    def action_help(self) -> None:
        """Every key, in a dialog."""
        keys = [(b.key_display or b.key, b.description) for b in self._bindings_list()]
        self.push_screen(HelpScreen([*keys, *self.HELP_EXTRA]))

    def _bindings_list(self) -> list[Binding]:
        return [b for b in self.BINDINGS if isinstance(b, Binding)]

    def action_continue_run(self) -> None:
        """Resume the selected graph: re-check the tree (``graph continue``; asks first)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed(
                "Continue: re-check the tree and go on?", "continue", "continue_run", graph
            )

    def action_run_from_node(self) -> None:
        """Resume by starting the next spec at a node picked from the graph's nodes."""
        graph = self.selected_graph()
        if graph is None or self.page is None or self.page.item_id != graph:
            return

        def picked(node: str | None) -> None:
            if node is not None:
                self.act(f"continue from {node}", "continue_run", graph, "run_from_node", node)

        choices = [(node, node) for node in self.page.nodes]
        self.push_screen(PickScreen("Start the next spec at node:", choices), picked)

    def action_skip_next(self) -> None:
        """Resume by skipping the next spec (asks first: the spec is marked skipped)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed(
                "Skip the next spec and go on?",
                "skip next spec",
                "continue_run",
                graph,
                "skip_next_spec",
            )

    def action_pause(self) -> None:
        """Pause the selected graph at the next spec boundary (asks first)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed("Pause the run at the next spec?", "pause", "pause", graph)

    def action_stop(self) -> None:
        """Kill the node in flight and pause (asks first)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed(
                "Stop: kill the node in flight, mark its spec interrupted and pause?",
                "stop",
                "stop",
                graph,
            )

    def action_reset(self) -> None:
        """End the run and return the graph to idle (asks first)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed(
                "Reset: end the run, clear the blocker and reopen bound specs?",
                "reset",
                "reset",
                graph,
            )

    def action_toggle_dirty(self) -> None:
        """Flip the selected graph's ``allow_dirty_start`` (``graph edit``; asks first)."""
        graph = self.selected_graph()
        if graph is not None:
            self._confirmed(
                "Flip allow_dirty_start: let runs start on, or refuse, a dirty tree?",
                "allow_dirty_start",
                "toggle_dirty",
                graph,
            )

    def action_run_graph(self) -> None:
        """Start a run of the selected graph over a queue picked from the sidebar's
        queues, or over its bound specs if it has any (``graph run``)."""
        graph = self.selected_graph()
        if graph is not None:
            self.offer_runs(graph)

    @work(thread=True, group="dialog")
    def offer_runs(self, graph: str) -> None:
        """Whether the graph has bound specs, read on a worker thread, then the choice."""
        from canopy.ops.graph_info import stored_graph_info

        try:
            bound = bool(stored_graph_info(self.store(), graph).specs)
        except Exception as error:
            line = str(error) if isinstance(error, Refused) else unexpected_error_line(error)
            self.call_from_thread(self.notify, line, title="run", severity="error")
            return
        self.call_from_thread(self.pick_run, graph, bound)

    def pick_run(self, graph: str, has_bound_specs: bool) -> None:
        """Offer the project's queues, and the graph's bound specs when it has some."""
        bound = "(its bound specs)"
        queues = self.query_one("#queues", Section).shown
        choices = [(queue_id, line.plain) for queue_id, line in queues]
        if has_bound_specs:
            choices.insert(0, (bound, bound))
        if not choices:
            said = "no bound specs, and the project has no queue to run it over"
            self.notify(f"the graph has {said}", title="run", severity="warning")
            return

        def picked(queue: str | None) -> None:
            if queue is not None:
                over = "its bound specs" if queue == bound else dict(choices)[queue]
                question = f"Start a run over {over}?"
                self._confirmed(question, "run", "run", graph, None if queue == bound else queue)

        self.push_screen(PickScreen("Run the graph over:", choices), picked)

    def action_edit_spec(self) -> None:
        """Edit the selected spec's body in ``$EDITOR`` (``spec update --body-file``)."""
        if self.selected is not None and self.selected[0] == "spec":
            self.read_spec_body(self.selected[1])

    @work(thread=True, group="dialog")
    def read_spec_body(self, spec: str) -> None:
        """Read the spec's body, then open the editor on it."""
        try:
            with self.portable() as source:
                body = specs.spec_get(source, spec)["body"]
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
            return
        self.call_from_thread(self.write_spec, spec, None, body, None)

    def action_new_spec(self) -> None:
        """Ask a name, then write the new spec's body in ``$EDITOR`` (``spec create``,
        tagged with the selected project's workdir)."""

        def named(name: str | None) -> None:
            if name:
                self.write_spec(None, name, NEW_SPEC_BODY, self.project)

        self.push_screen(AskScreen("Name of the new spec:"), named)

    def write_spec(
        self, spec: str | None, name: str | None, body: str, workdir: str | None
    ) -> None:
        """Open the editor on a draft of ``body``, then save what was written: an update
        of ``spec``, or a new spec called ``name``. An unchanged draft saves nothing."""
        handle, path = tempfile.mkstemp(prefix="canopy-spec-", suffix=".md")
        draft = Path(path)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(body)
        try:
            edit(self, draft)
        except Refused as refusal:
            self.notify(str(refusal), title="edit spec", severity="error")
            return
        written = draft.read_text(encoding="utf-8")
        if spec is not None and written == body:
            draft.unlink()
            self.notify("no change", title="edit spec")
            return
        self.act("save spec", "save_spec", spec, name, written, workdir, str(draft))

    def action_queue_add(self) -> None:
        """Add a spec of the project's Backlog to the selected queue, in a group or none."""
        self._with_queue("add")

    def action_queue_remove(self) -> None:
        """Take a member out of the selected queue (asks first)."""
        self._with_queue("remove")

    def action_queue_move(self) -> None:
        """Move a member of the selected queue to another place (``queue reorder``)."""
        self._with_queue("move")

    def action_queue_group(self) -> None:
        """Put a member of the selected queue in a group, or in none."""
        self._with_queue("group")

    def _with_queue(self, verb: str) -> None:
        if self.selected is not None and self.selected[0] == "queue":
            self.read_queue(verb, self.selected[1], self.project)

    @work(thread=True, group="dialog")
    def read_queue(self, verb: str, queue: str, project: str | None) -> None:
        """Read the queue's members (and, to add, the project's Backlog), then open the
        dialog for ``verb``."""
        try:
            with self.portable() as source:
                listing = queues.queue_list(source, queue)
                backlog = specs.spec_list(source, workdir=project, standalone=True)
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
            return
        self.call_from_thread(self.queue_dialog, verb, listing, backlog)

    def queue_dialog(
        self, verb: str, listing: dict[str, Any], backlog: list[dict[str, Any]]
    ) -> None:
        """The dialogs of the queue actions: pick a spec (and a group or a place), then
        run one queue operation. A refusal (a reorder that would split a group) is
        shown as the CLI's line and changes nothing."""
        queue, name, members = listing["id"], listing["name"], listing["members"]
        lines = [
            (m["spec_id"], f"{m['position']}. {m['name']} [{m['group'] or '-'}]") for m in members
        ]

        def with_group(question: str, then: Callable[[str | None], object]) -> None:
            def answered(group: str | None) -> None:
                if group is not None:
                    then(group or None)

            self.push_screen(AskScreen(question), answered)

        def add(spec: str | None) -> None:
            if spec is not None:
                with_group(
                    "Group (empty for none):",
                    lambda group: self.act("add", "add_to_queue", queue, spec, group),
                )

        def remove(spec: str | None) -> None:
            if spec is not None:
                question = f"Remove {spec} from {name}?"
                self._confirmed(question, "remove", "remove_from_queue", queue, spec)

        def move(spec: str | None) -> None:
            if spec is None:
                return
            rest = [m for m in members if m["spec_id"] != spec]
            places = [
                ("0", "first"),
                *((str(i + 1), f"after {m['name']}") for i, m in enumerate(rest)),
            ]

            def place(at: str | None) -> None:
                if at is not None:
                    ids = [m["spec_id"] for m in rest]
                    order = [*ids[: int(at)], spec, *ids[int(at) :]]
                    self.act("reorder", "reorder", queue, order)

            self.push_screen(PickScreen(f"Move {spec} to:", places), place)

        def group(spec: str | None) -> None:
            if spec is not None:
                with_group(
                    "Group (empty to clear):",
                    lambda group: self.act("group", "set_group", queue, spec, group),
                )

        if verb == "add":
            inside = {m["spec_id"] for m in members}
            outside = [(s["id"], s["name"]) for s in backlog if s["id"] not in inside]
            self.push_screen(PickScreen(f"Add to {name}:", outside), add)
        elif verb == "remove":
            self.push_screen(PickScreen("Remove which member?", lines), remove)
        elif verb == "move":
            self.push_screen(PickScreen("Move which member?", lines), move)
        else:
            self.push_screen(PickScreen("Group which member?", lines), group)

    def action_new_session(self) -> None:
        """The New Session dialog for the selected project (or the current directory,
        when all projects are shown): a new session, or one to resume."""
        self.read_session_choices(self.project or normalize_workdir(self.cwd))

    @work(thread=True, group="dialog")
    def read_session_choices(self, workdir: str) -> None:
        """Read the New Session dialog's choices, then open it."""
        try:
            choices = reads.read_session_choices(self.store(), workdir)
        except Exception as error:
            self.call_from_thread(self.show_read_error, error)
            return
        self.call_from_thread(self.show_session_choices, workdir, choices)

    def show_session_choices(self, workdir: str, choices: list[reads.SessionChoice]) -> None:
        """Open the New Session dialog; the pick runs its action."""

        def picked(index: str | None) -> None:
            if index is not None:
                choice = choices[int(index)]
                self.act(choice.label, choice.action, *choice.args)

        lines = [(str(index), choice.label) for index, choice in enumerate(choices)]
        self.push_screen(PickScreen(f"New session in {workdir}:", lines), picked)

    def action_toggle_finished(self) -> None:
        """Show finished sessions too, or live ones only."""
        self.finished_sessions = not self.finished_sessions
        self.reread_sidebar()

    def action_filter(self) -> None:
        """Show the filter box: lists keep only rows containing its text."""
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """The filter applies as it is typed."""
        if event.input.id == "filter":
            self.filter_text = event.value.strip().lower()
            self.reread_sidebar()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the prompt box sends the message; in the filter, back to the lists."""
        if event.input.id == "filter":
            self.query_one("#backlog", Section).focus()
            return
        if self.selected is None or self.selected[0] != "session" or not event.value.strip():
            return
        session, prompt = self.selected[1], event.value
        event.input.clear()
        self.act("send", "send", session, prompt)

    def on_key(self, event: Any) -> None:
        """Escape in the filter box clears and hides it."""
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.remove_class("shown")
            self.query_one("#backlog", Section).focus()


def run(workdir: str | None) -> None:
    """Run the TUI until the user quits."""
    CanopyApp(workdir=workdir).run()
