"""The typer application: the root ``canopy`` command, whose commands load only when used.

Importing every command module up front cost each command the imports of all the others
(the Temporal contracts, pydantic, jinja2, the platforms), about half a
second. So the root knows its commands only by name, the module that defines each and the
line ``canopy --help`` shows for it (:data:`COMMANDS`); ``canopy spec get`` imports
:mod:`canopy.cli.spec_cmds` alone, and ``canopy --help`` imports no command module.
``tests/test_cli.py`` checks that the help lines match the commands' own help.

Help and usage errors are typer's plain rendering (:data:`HELP_MARKUP`), not its rich
one: the rich renderer imports ``rich.markdown`` (markdown-it) and ``rich.traceback``
whatever the help holds, which made ``canopy --help`` twice as slow as the plain one.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click.exceptions import ClickException  # typer's own copy of click
from typer.core import TyperCommand, TyperGroup

from canopy.cli.render import json_requested, print_json

if TYPE_CHECKING:
    from collections.abc import Iterator

    from typer._click import Command, Context  # typer's own copy of click, not click
    from typer.core import MarkupMode

HELP_MARKUP: MarkupMode = None
"""Typer's plain help and usage errors, for the root and every command it loads."""

COMMANDS: dict[str, tuple[str, str, str]] = {
    "notifications": (
        "canopy.cli.session_cmds",
        "notifications_command",
        "What went wrong while nobody watched: undeliverable messages, failed deliveries.",
    ),
    "usage": (
        "canopy.cli.usage_cmds",
        "usage_command",
        "Tokens and cost the harnesses reported, summed by platform and model.",
    ),
    "up": (
        "canopy.cli.server_cmds",
        "up",
        "Start the dev server (if needed) and the worker in the background; wait until serving.",
    ),
    "down": (
        "canopy.cli.server_cmds",
        "down",
        "Stop the background worker gracefully, then the dev server.",
    ),
    "worker": (
        "canopy.cli.server_cmds",
        "worker",
        "Run the worker in the foreground (same as `python worker.py`); --json logs JSON lines.",
    ),
    "notify": (
        "canopy.cli.notify_cmds",
        "notify_command",
        "Send a notification through Apprise (ntfy, Slack, Discord, email, webhooks, …).",
    ),
    "doctor": (
        "canopy.cli.doctor_cmds",
        "doctor_command",
        "Check the agent CLIs in use: installed, version, argv, permissions, sign-in.",
    ),
    "env": (
        "canopy.cli.server_cmds",
        "env_command",
        "Print the TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE of this data dir's server.",
    ),
    "mcp": ("canopy.cli.mcp_cmds", "mcp", "Serve Canopy's tools to an agent over MCP (stdio)."),
    "tui": (
        "canopy.cli.tui_cmds",
        "tui",
        "Open the terminal UI: backlog, queues, graphs and sessions by project.",
    ),
    "demo": (
        "canopy.cli.demo_cmds",
        "demo",
        "A guided tour on a scratch data dir: backlog, queues, then a real graph run over the\n"
        "queue on the embedded Temporal server (what `make demo` runs).",
    ),
    "spec": ("canopy.cli.spec_cmds", "app", "The spec backlog."),
    "project": (
        "canopy.cli.project_cmds",
        "app",
        "Projects: the workdirs of specs, graphs and sessions.",
    ),
    "queue": ("canopy.cli.queue_cmds", "app", "Ordered queues of specs with context groups."),
    "graph": ("canopy.cli.graph_cmds", "app", "Graphs: pipelines of agent and command nodes."),
    "schedule": (
        "canopy.cli.schedule_cmds",
        "app",
        "Schedules: a graph's runs started on a cron (canopy graph schedule makes one).",
    ),
    "worktree": (
        "canopy.cli.worktree_cmds",
        "app",
        "Lane worktrees: list those runs of lanes made, prune those left over.",
    ),
    "session": ("canopy.cli.session_cmds", "app", "Interactive sessions and their messages."),
    "server": ("canopy.cli.server_cmds", "app", "The embedded Temporal dev server."),
}
"""Every command of the root, in help order: the module defining it, the attribute there
(a sub-app, or a command function) and its line in ``canopy --help``. For a sub-app that
line is also its help; a command function's help is its docstring, whose first paragraph
the line repeats."""


def load_command(name: str) -> Command:
    """The click command ``canopy NAME`` runs, built as typer would have built it inside
    the root (a sub-app gets its help line as its help)."""
    module_name, attribute, help_line = COMMANDS[name]
    target = getattr(import_module(module_name), attribute)
    holder = typer.Typer(add_completion=False, rich_markup_mode=HELP_MARKUP)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name, help=help_line)
        group = typer.main.get_command(holder)
        assert isinstance(group, TyperGroup)
        command = group.commands[name]
    else:
        holder.command(name)(target)
        command = typer.main.get_command(holder)
    _list_whole_first_paragraphs(command)
    return command


def _list_whole_first_paragraphs(command: Command) -> None:
    """Make the command lists of ``command``'s help (and its sub-groups') show each
    command's whole first paragraph, as :data:`COMMANDS` does for the root's: the plain
    renderer otherwise cuts a line longer than about 50 characters with ``...``."""
    for sub in getattr(command, "commands", {}).values():
        if sub.short_help is None and sub.help:
            sub.short_help = inspect.cleandoc(sub.help).split("\n\n")[0]
        _list_whole_first_paragraphs(sub)


class LazyRoot(TyperGroup):
    """The root group: its commands are help lines until one of them is run.

    Typer's help lists ``self.commands``, which hold stand-ins carrying only a name and a
    help line; :meth:`resolve_command`, which every invocation goes through, swaps in the
    real command. Unknown names are refused (with typer's "did you mean") exactly as
    before, since the names are all there.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, (_module, _attribute, help_line) in COMMANDS.items():
            self.commands[name] = TyperCommand(name, help=help_line, short_help=help_line)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        """The command ``args`` name, loaded; refusals as typer makes them."""
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None:
            command = self.commands[name] = load_command(name)
        return name, command, rest

    def make_context(
        self, info_name: str | None, args: list[str], parent: Context | None = None, **extra: Any
    ) -> Context:
        """The root's context; a usage error in the root's own arguments is also JSON when
        they ask for ``--json``, which :meth:`invoke` learns from the context."""
        as_json = json_requested(args)
        with _usage_errors_as_json(as_json):
            ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[_JSON_KEY] = as_json
        return ctx

    def invoke(self, ctx: Context) -> Any:
        """Run the command; its usage errors (typer's exit 2) are also JSON with ``--json``."""
        with _usage_errors_as_json(ctx.meta.get(_JSON_KEY, False)):
            return super().invoke(ctx)


_JSON_KEY = "canopy.json"
"""Where the root's context records whether the command line asked for ``--json``."""


@contextmanager
def _usage_errors_as_json(as_json: bool) -> Iterator[None]:
    """Print a usage error as ``{"error": …}`` on stdout when ``--json`` was asked for, then
    let it go on to typer, which shows its usual box on stderr and exits 2."""
    try:
        yield
    except ClickException as error:
        if as_json:
            print_json({"error": error.format_message()})
        raise


app = typer.Typer(
    name="canopy",
    cls=LazyRoot,
    help="Run AI coding agents unattended over a backlog of specs, on Temporal.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=HELP_MARKUP,
)
"""The root. Typer's completion options (``--install-completion``, ``--show-completion``)
are on: completing a command's options goes through :meth:`LazyRoot.resolve_command`,
which loads just that command, and completing command names needs only the stand-ins."""


def _print_version(asked: bool) -> None:
    """``--version``: print ``canopy <version>`` and stop before any command runs."""
    if asked:
        from canopy.version import canopy_version  # reading package metadata costs ~10 ms

        print(f"canopy {canopy_version()}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """Takes only ``--version``: the callback makes typer build the root as a group."""
