"""``canopy server start|stop|status|check``, ``canopy up|down`` and ``canopy worker``.

:mod:`canopy.temporal.devserver` and :mod:`canopy.temporal.daemon` are stdlib-only at
import time, and the worker module (which imports the SDK) is imported inside ``worker``,
so ``canopy server status`` and every ``--help`` here start without temporalio. ``up`` and
``down`` do load it (``temporalio.envconfig``): whether the server is Canopy's to start
and stop depends on the connection settings, a ``temporal.toml`` profile included, which
only the SDK reads the way the ``temporal`` CLI does.
"""

from typing import Annotated, Any

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_block, print_line, spinner
from canopy.temporal import daemon, devserver

PortOption = Annotated[
    int | None,
    typer.Option(
        "--port",
        min=1,
        max=65535,
        help="Frontend gRPC port of the dev server (default: the port this data dir's "
        "server last ran on, else 7233).",
    ),
]
UiPortOption = Annotated[
    int | None,
    typer.Option(
        "--ui-port",
        min=1,
        max=65535,
        help="Web UI port of the dev server (default: the one it last ran on, else 8233).",
    ),
]


def _print_server(info: dict[str, Any], headline: str) -> None:
    """The short human view of a dev server: where to connect, the UI, the files."""
    print_line(headline)
    if info["running"]:
        print_line(f"  address: {info['address']}")
        print_line(f"  UI:      {info['ui_url']}")
    print_line(f"  db:      {info['db_file']}")
    print_line(f"  log:     {info['log_file']}")


def _server_headline(info: dict[str, Any]) -> str:
    """One line saying whether the server runs and as which pid."""
    if info["running"]:
        return f"Temporal dev server running (pid {info['pid']})"
    note = " (removed a stale server.json)" if info["stale_record_removed"] else ""
    return f"Temporal dev server stopped{note}"


def _print_worker(info: dict[str, Any]) -> None:
    """The short human view of the background worker."""
    state = f"running (pid {info['pid']})" if info["running"] else "stopped"
    print_line(f"Worker {state}")
    print_line(f"  log:     {info['log_file']}")


def server_start(
    port: PortOption = None,
    ui_port: UiPortOption = None,
    json: JsonFlag = False,
) -> None:
    """Start the embedded Temporal dev server in the background (no-op if running)."""
    info = devserver.start(port, ui_port)
    verb = "started" if info["started"] else "already running"
    emit(info, json, lambda: _print_server(info, f"Temporal dev server {verb} (pid {info['pid']})"))


def server_stop(json: JsonFlag = False) -> None:
    """Stop the embedded Temporal dev server (workflows persist in its db file)."""
    info = devserver.stop()
    if info["stopped"]:
        forced = ", had to SIGKILL" if info["forced"] else ""
        line = f"Temporal dev server stopped (pid {info['pid']}{forced})"
    else:
        line = "Temporal dev server was not running"
    emit(info, json, lambda: print_line(line))


def server_status(json: JsonFlag = False) -> None:
    """Show whether the dev server and the background worker run, and where."""
    info = {**devserver.status(), "worker": daemon.worker_status()}

    def human() -> None:
        _print_server(info, _server_headline(info))
        _print_worker(info["worker"])

    emit(info, json, human)


def up(
    port: PortOption = None,
    ui_port: UiPortOption = None,
    json: JsonFlag = False,
) -> None:
    """Start the dev server (if needed) and the worker in the background; wait until serving.

    Then say in one line how to finish runs of the retired workflow type that are still
    open: the worker just started cannot run them.
    """
    import asyncio

    from canopy.ops import retired_runs

    stages = ["checking what already runs"]
    with spinner(lambda: stages[-1]):
        info = daemon.up(port, ui_port, stage=stages.append)
        stages.append("looking for runs of the retired workflow type")
        info["retired_runs"] = asyncio.run(retired_runs.check())

    def human() -> None:
        server, worker = info["server"], info["worker"]
        if server.get("external"):
            print_line(f"Using Temporal at {server['address']} ({server['source']})")
            if server.get("search_attributes"):
                print_line(server["search_attributes"])
        else:
            verb = "started" if server["started"] else "already running"
            _print_server(server, f"Temporal dev server {verb} (pid {server['pid']})")
        verb = "started" if worker["started"] else "already running"
        print_line(
            f"Worker {verb} (pid {worker['pid']}), polling {', '.join(worker['task_queues'])}"
        )
        print_line(f"  log:     {worker['log_file']}")
        if info["retired_runs"] is not None:
            print_line(f"warning: {info['retired_runs']}")

    emit(info, json, human)


def down(json: JsonFlag = False) -> None:
    """Stop the background worker gracefully, then the dev server."""
    info = daemon.down()

    def human() -> None:
        worker, server = info["worker"], info["server"]
        if worker["stopped"]:
            forced = ", had to SIGKILL" if worker["forced"] else ""
            print_line(f"Worker stopped (pid {worker['pid']}{forced})")
        else:
            print_line("Worker was not running")
        if server.get("external"):
            print_line(f"Left Temporal at {server['address']} running ({server['source']})")
        elif server["stopped"]:
            print_line(f"Temporal dev server stopped (pid {server['pid']})")
        else:
            print_line("Temporal dev server was not running")

    emit(info, json, human)


def worker(json: JsonFlag = False) -> None:
    """Run the worker in the foreground (same as `python worker.py`); --json logs JSON lines."""
    from canopy import worker as worker_module

    worker_module.main(json_logs=json)


def server_check(json: JsonFlag = False) -> None:
    """Check that a daemon serves: Temporal answers and a worker polls Canopy's task queue."""
    import asyncio

    from canopy.ops import control

    info = asyncio.run(control.daemon_check())
    line = "daemon serving" if info["serving"] else f"daemon down: {info['problem']}"
    emit(info, json, lambda: print_line(line))


def env_command(json: JsonFlag = False) -> None:
    """Print the TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE of this data dir's server.

    As `export` lines, for `eval "$(canopy env)"` before using the `temporal` CLI: it then
    reaches the server this data dir's runs live on, running or not, on whatever ports it
    was started (TEMPORAL_ADDRESS or a temporal.toml profile, when set, win as always).
    """
    from canopy.temporal.client import connection_env

    found = connection_env()
    lines = "\n".join(f"export {name}={value}" for name, value in found.items())
    emit(found, json, lambda: print_block(lines))


app = typer.Typer(no_args_is_help=True)
app.command("start")(server_start)
app.command("stop")(server_stop)
app.command("status")(server_status)
app.command("check")(server_check)
