"""The TUI's actions: the dialogs a key opens and the operations they run.

Each action runs a CLI command's operation (:mod:`canopy.tui.steering`) on a worker
thread, asks first when it changes a run or a queue, says in one line how it went, and
re-reads the view. Reads a dialog needs (a queue's members, a spec's body, the New
Session choices) run on a worker thread too, so no key waits on the store.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work

from canopy.errors import Refused, unexpected_error_line
from canopy.ops import queues, specs
from canopy.tui import reads
from canopy.tui.editor import NEW_SPEC_BODY, edit
from canopy.tui.screens import AskScreen, ConfirmScreen, PickScreen, ReportScreen
from canopy.tui.sections import Section
from canopy.tui.view import ViewApp
from canopy.workdir import normalize_workdir


class ActionsApp(ViewApp):
    """The view, with the actions its keys run (the keys are bound in
    :class:`~canopy.tui.app.CanopyApp`)."""

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
            body = specs.spec_get(self.store(), spec)["body"]
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
            listing = queues.queue_list(self.store(), queue)
            backlog = specs.spec_list(self.store(), workdir=project, standalone=True)
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
