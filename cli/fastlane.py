"""The fast lane: the store commands people and agents run most, the steering commands
and ``session send`` and ``resume``, without typer.

Importing typer (which builds its options with pydantic) costs several interpreter starts,
while these commands only read or write a few rows. So they are parsed here and run the
same operations on the same store as the typer commands (:mod:`canopy.ops.specs`,
:mod:`canopy.ops.queues`, …), each in its own transaction, committed when it succeeds; a
command that then talks to Temporal (``session send`` and ``resume`` wake the daemon)
returns that step, run after the commit.

Anything this lane does not fully understand (another command, ``--help``, an unknown or
repeated option, a missing option or value, a value typer would convert differently, a
store named by ``CANOPY_DB_URL``) falls through to the typer app, which owns usage
errors. ``tests/test_cli.py`` checks that both answer alike.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from canopy.cli import views
from canopy.cli.render import emit
from canopy.paths import configured_db_url

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import TypeAlias

    from canopy.store.engine import Store

    Options: TypeAlias = dict[str, str]
    Then: TypeAlias = Callable[[], None]
    """What a command does once its transaction is committed."""
    Handler: TypeAlias = Callable[[Store, Options, list[str], bool], Then | None]

_FLAG = "true"
"""The value a flag (``--all``) gets in the parsed options."""
_NUMBER = re.compile("[0-9]{1,9}")
"""An integer option value that typer and ``int()`` read alike. Others fall through:
typer reads ``5.0`` as 5 and refuses ``٣``, which ``int()`` reads as 3."""
_SECONDS = re.compile("[0-9]{1,9}([.][0-9]{1,9})?")
"""A seconds option value that typer and ``float()`` read alike; others fall through."""


class _Command:
    """A command this lane serves: what it accepts and the function that runs it."""

    __slots__ = (
        "aliases",
        "decimals",
        "files",
        "flags",
        "handler",
        "numbers",
        "options",
        "positionals",
        "required",
    )

    def __init__(
        self,
        handler: Handler,
        positionals: tuple[int, int | None] = (0, 0),
        options: tuple[str, ...] = (),
        flags: tuple[str, ...] = (),
        required: tuple[str, ...] = (),
        files: tuple[str, ...] = (),
        numbers: tuple[str, ...] = (),
        decimals: tuple[str, ...] = (),
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.handler = handler
        self.positionals = positionals
        """The fewest and most positional arguments (``None``: no limit)."""
        self.options = options
        """Options that take a value (``--name VALUE`` or ``--name=VALUE``)."""
        self.flags = flags
        """Options without a value, besides ``--json``."""
        self.required = required
        """Options typer requires: without them, typer prints the usage error."""
        self.files = files
        """Options naming a file, which typer checks before the command runs."""
        self.numbers = numbers
        """Options taking an integer, which typer converts before the command runs."""
        self.decimals = decimals
        """Options taking a number of seconds (a float), which typer converts too."""
        self.aliases = aliases or {}
        """Short names of options (``-f``: ``--file``); giving both is a repeat."""


def try_run(args: list[str]) -> bool:
    """Serve ``args`` if this lane can; ``False`` means the caller must use typer."""
    found = _command_of(args)
    if found is None or configured_db_url():
        return False
    command, tokens = found
    parsed = _parse(tokens, command)
    if parsed is None:
        return False
    from canopy.store.engine import open_store

    then = command.handler(open_store(), *parsed)
    if then is not None:  # the command's write is committed: the daemon can read it
        then()
    return True


def _command_of(args: list[str]) -> tuple[_Command, list[str]] | None:
    """The served command ``args`` start with (two words, or one) and the tokens after it."""
    for words in (2, 1):
        command = _COMMANDS.get(tuple(args[:words])) if len(args) >= words else None
        if command is not None:
            return command, args[words:]
    return None


def _parse(tokens: list[str], command: _Command) -> tuple[Options, list[str], bool] | None:
    """``--name value``/``--name=value`` options, flags, positionals and ``--json``, if
    they are what ``command`` accepts; else ``None``."""
    options: Options = {}
    positionals: list[str] = []
    as_json = False
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name, _, inline = token.partition("=")
        name = command.aliases.get(name, name)
        if token == "--json":
            as_json = True
        elif token in command.flags:
            options[token] = _FLAG
        elif name in command.options and name not in options:
            if inline or "=" in token:
                options[name] = inline
            elif index + 1 < len(tokens):
                index += 1
                options[name] = tokens[index]
            else:
                return None
        elif token.startswith("-"):
            return None
        else:
            positionals.append(token)
        index += 1
    fewest, most = command.positionals
    if len(positionals) < fewest or (most is not None and len(positionals) > most):
        return None
    if any(name not in options for name in command.required):
        return None
    if not all(_readable_or_absent(options.get(name)) for name in command.files):
        return None
    if not all(_NUMBER.fullmatch(options.get(name, "0")) for name in command.numbers):
        return None
    if not all(_SECONDS.fullmatch(options.get(name, "0")) for name in command.decimals):
        return None
    return options, positionals, as_json


def _path(value: str | None) -> Path | None:
    """An option naming a file, as typer hands it over."""
    if value is None:
        return None
    from pathlib import Path

    return Path(value)


def _readable_or_absent(path: str | None) -> bool:
    """Whether typer accepts ``path`` for a file option: it refuses one that exists but
    cannot be read (a usage error) before the command runs."""
    return path is None or not os.path.exists(path) or os.access(path, os.R_OK)


# --------------------------------------------------------------------------- specs


def _spec_list(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.ops import specs

    limit = options.get("--limit")
    result = specs.spec_list(
        store,
        options.get("--workdir"),
        options.get("--status"),
        "--standalone" in options,
        options.get("--contains"),
        None if limit is None else int(limit),
    )
    emit(result, as_json, lambda: views.show_spec_list(result))


def _spec_count(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli.render import print_line
    from canopy.ops import specs

    result = specs.spec_count(
        store,
        options.get("--workdir"),
        options.get("--status"),
        "--standalone" in options,
        options.get("--contains"),
    )
    emit(result, as_json, lambda: print_line(str(result["count"])))


def _spec_get(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import specs

    result = specs.spec_get(store, positionals[0])
    emit(result, as_json, lambda: views.show_spec(result))


def _spec_create(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli.inputs import new_body
    from canopy.ops import specs

    body = new_body(_path(options.get("--body-file")), options.get("--body"))
    result = specs.spec_create(store, options["--name"], body, options.get("--workdir"))
    emit(result, as_json, lambda: views.show_created(result))


def _spec_update(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli.inputs import read_body
    from canopy.ops import specs

    body = read_body(_path(options.get("--body-file")), options.get("--body"))
    result = specs.spec_update(
        store,
        positionals[0],
        options.get("--name"),
        body,
        options.get("--workdir"),
        "--clear-workdir" in options,
    )
    emit(result, as_json, lambda: views.show_updated(result))


def _spec_delete(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import specs

    result = specs.spec_delete(store, positionals[0])
    emit(result, as_json, lambda: views.show_deleted(result))


def _spec_set_status(
    store: Store, _options: Options, positionals: list[str], as_json: bool
) -> None:
    from canopy.ops import specs

    result = specs.spec_set_status(store, *positionals)
    emit(result, as_json, lambda: views.show_status(result))


def _spec_section(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli.render import print_block
    from canopy.ops import specs

    result = specs.spec_section(store, *positionals)
    emit(result, as_json, lambda: print_block(result["markdown"]))


# --------------------------------------------------------------------------- projects


def _project_list(store: Store, _options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.ops import projects

    result = projects.project_list(store)
    emit(result, as_json, lambda: views.show_projects(result))


# --------------------------------------------------------------------------- queues


def _queue_list(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import queues

    result = queues.queue_list(store, positionals[0] if positionals else None)
    emit(result, as_json, lambda: views.show_queue_list(result))


def _queue_create(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import queues

    result = queues.queue_create(store, positionals[0])
    emit(result, as_json, lambda: views.show_queue(result))


def _queue_add(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import queues

    queue, spec = positionals
    result = queues.queue_add_spec(store, queue, spec, options.get("--group"))
    emit(result, as_json, lambda: views.show_queue(result))


def _queue_remove(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import queues

    result = queues.queue_remove_spec(store, *positionals)
    emit(result, as_json, lambda: views.show_queue(result))


def _queue_reorder(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import queues

    result = queues.queue_reorder(store, positionals[0], positionals[1:])
    emit(result, as_json, lambda: views.show_queue(result))


def _queue_group(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli.inputs import chosen_group
    from canopy.ops import queues

    queue, spec, *group = positionals
    label = chosen_group(group[0] if group else None, "--clear" in options)
    result = queues.queue_set_group(store, queue, spec, label)
    emit(result, as_json, lambda: views.show_queue(result))


# --------------------------------------------------------------------------- graphs


def _graph_list(store: Store, _options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.store import queries

    with store.transaction() as rows:
        result = queries.list_graphs(rows)
    emit(result, as_json, lambda: views.show_graph_list(result))


def _graph_info(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import graph_views
    from canopy.ops.graph_info import stored_graph_info

    info = stored_graph_info(store, positionals[0])
    if info.asks_temporal():  # only then is the full operation's Temporal check needed
        from canopy.ops.graphs import with_consistency_warning

        info = with_consistency_warning(info)
    emit(info.as_json(), as_json, lambda: graph_views.show_graph(info))


def _graph_create(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli.inputs import read_definition
    from canopy.ops import graphs

    definition = read_definition(_path(options["--file"]), options.get("--host"))
    result = graphs.graph_create(store, definition)
    emit(result, as_json, lambda: views.show_created(result))


def _graph_edit(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli.inputs import read_definition
    from canopy.ops import graphs

    changes = read_definition(_path(options.get("--file")), options.get("--host"))
    result = graphs.graph_edit(store, positionals[0], changes)
    emit(result, as_json, lambda: views.show_updated(result))


def _graph_delete(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.ops import graphs

    result = graphs.graph_delete(store, positionals[0])
    emit(result, as_json, lambda: views.show_graph_deleted(result))


# --------------------------------------------------------------------------- steering


def _graph_continue(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import steering

    mode = options.get("--mode", "recheck")
    node, spec = options.get("--node"), options.get("--spec")
    steering.continue_run(store, positionals[0], mode, node, spec, as_json)


def _graph_pause(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import steering

    steering.pause(store, positionals[0], as_json)


def _graph_stop(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import steering

    steering.stop(store, positionals[0], as_json)


def _graph_reset(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import steering

    steering.reset(store, positionals[0], as_json)


# --------------------------------------------------------------------------- sessions


def _session_list(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli import session_views
    from canopy.ops import sessions

    result = sessions.session_list(store, include_finished="--all" in options)
    emit(result, as_json, lambda: session_views.show_sessions(result))


def _session_get(store: Store, options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import session_views
    from canopy.ops import sessions

    if "--transcript" in options:
        from canopy.ops.transcripts import session_transcript

        result = session_transcript(store, positionals[0])
    else:
        result = sessions.session_get(store, positionals[0])
    emit(result, as_json, lambda: session_views.show_session(result))


def _session_new(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli import session_views
    from canopy.ops import sessions

    result = sessions.session_new(
        store,
        options["--platform"],
        options.get("--name"),
        options.get("--workdir"),
        options.get("--permissions"),
    )
    emit(result, as_json, lambda: session_views.show_session(result))


def _session_close(store: Store, _options: Options, positionals: list[str], as_json: bool) -> None:
    from canopy.cli import session_views
    from canopy.ops import sessions

    result = sessions.session_close(store, positionals[0])
    emit(result, as_json, lambda: session_views.show_session(result))


def _session_send(store: Store, options: Options, positionals: list[str], as_json: bool) -> Then:
    from canopy.cli import sending

    wait = options.get("--wait")
    seconds = None if wait is None else float(wait)
    session, prompt = positionals
    message = sending.store_message(store, session, prompt, seconds)
    return lambda: sending.deliver(store, message, seconds, as_json)


def _session_resume(store: Store, options: Options, positionals: list[str], as_json: bool) -> Then:
    from canopy.cli import sending
    from canopy.ops import sessions

    resumed = sessions.session_resume_either(
        store,
        positionals[0] if positionals else None,
        options.get("--harness-conversation"),
        options.get("--platform"),
        options.get("--workdir"),
    )
    return lambda: sending.wake_resumed(resumed, as_json)


def _notifications(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.cli import session_views
    from canopy.ops import notifications

    limit = int(options.get("--limit", notifications.DEFAULT_LIMIT))
    result = notifications.notifications_list(store, limit)
    emit(result, as_json, lambda: session_views.show_notifications(result))


def _usage(store: Store, options: Options, _positionals: list[str], as_json: bool) -> None:
    from canopy.ops.usage import usage_report

    result = usage_report(store, options.get("--since"), options.get("--graph"))
    emit(result, as_json, lambda: views.show_usage(result))


_COMMANDS: dict[tuple[str, ...], _Command] = {
    ("spec", "list"): _Command(
        _spec_list,
        options=("--workdir", "--status", "--contains", "--limit"),
        flags=("--standalone",),
        numbers=("--limit",),
    ),
    ("spec", "count"): _Command(
        _spec_count, options=("--workdir", "--status", "--contains"), flags=("--standalone",)
    ),
    ("spec", "get"): _Command(_spec_get, (1, 1)),
    ("spec", "create"): _Command(
        _spec_create,
        options=("--name", "--body-file", "--body", "--workdir"),
        required=("--name",),
        files=("--body-file",),
    ),
    ("spec", "update"): _Command(
        _spec_update,
        (1, 1),
        options=("--name", "--body-file", "--body", "--workdir"),
        flags=("--clear-workdir",),
        files=("--body-file",),
    ),
    ("spec", "delete"): _Command(_spec_delete, (1, 1)),
    ("spec", "set-status"): _Command(_spec_set_status, (2, 2)),
    ("spec", "section"): _Command(_spec_section, (2, 2)),
    ("project", "list"): _Command(_project_list),
    ("queue", "list"): _Command(_queue_list, (0, 1)),
    ("queue", "create"): _Command(_queue_create, (1, 1)),
    ("queue", "add"): _Command(_queue_add, (2, 2), options=("--group",)),
    ("queue", "remove"): _Command(_queue_remove, (2, 2)),
    ("queue", "reorder"): _Command(_queue_reorder, (2, None)),
    ("queue", "group"): _Command(_queue_group, (2, 3), flags=("--clear",)),
    ("graph", "list"): _Command(_graph_list),
    ("graph", "info"): _Command(_graph_info, (1, 1)),
    ("graph", "create"): _Command(
        _graph_create,
        options=("--file", "--host"),
        required=("--file",),
        files=("--file",),
        aliases={"-f": "--file"},
    ),
    ("graph", "edit"): _Command(
        _graph_edit,
        (1, 1),
        options=("--file", "--host"),
        files=("--file",),
        aliases={"-f": "--file"},
    ),
    ("graph", "delete"): _Command(_graph_delete, (1, 1)),
    ("graph", "continue"): _Command(
        _graph_continue, (1, 1), options=("--mode", "--node", "--spec")
    ),
    ("graph", "pause"): _Command(_graph_pause, (1, 1)),
    ("graph", "stop"): _Command(_graph_stop, (1, 1)),
    ("graph", "reset"): _Command(_graph_reset, (1, 1)),
    ("session", "list"): _Command(_session_list, flags=("--all",)),
    ("session", "get"): _Command(_session_get, (1, 1), flags=("--transcript",)),
    ("session", "new"): _Command(
        _session_new,
        options=("--platform", "--name", "--workdir", "--permissions"),
        required=("--platform",),
    ),
    ("session", "send"): _Command(_session_send, (2, 2), options=("--wait",), decimals=("--wait",)),
    ("session", "close"): _Command(_session_close, (1, 1)),
    ("session", "resume"): _Command(
        _session_resume, (0, 1), options=("--harness-conversation", "--platform", "--workdir")
    ),
    ("notifications",): _Command(_notifications, options=("--limit",), numbers=("--limit",)),
    ("usage",): _Command(_usage, options=("--since", "--graph")),
}
"""Every command this lane serves, by the words that name it."""
