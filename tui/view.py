"""The TUI's live view: its layout, the reads that keep it current, and the selection
the detail pane follows.

A sidebar (project picker, Backlog, Queues, Graphs, Sessions) and a detail pane for the
item highlighted there. Every read is an operation from :mod:`canopy.ops`, run on a worker
thread exactly as a CLI command runs it, so the screen never waits on the store or
Temporal. The view re-reads about once a second; rows that did not change are not
redrawn. The actions on what is shown build on this class (:mod:`canopy.tui.actions`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, Input, Label, OptionList, Select, Static

from canopy.errors import Refused, unexpected_error_line
from canopy.tui import reads
from canopy.tui.rows import Listing
from canopy.tui.sections import Section

if TYPE_CHECKING:
    from canopy.store.engine import Store

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


class ViewApp(App[None]):
    """The Canopy terminal UI's view: what it shows, kept current."""

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
        first use, on a worker thread (a store that must first be created or migrated
        takes a moment)."""
        if self._store is None:
            from canopy.store.engine import open_store

            self._store = open_store()
        return self._store

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
            if first:
                project = reads.start_project(self.store(), self.start_workdir, self.cwd)
            sidebar = reads.read_backlog(self.store(), project, text)
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
