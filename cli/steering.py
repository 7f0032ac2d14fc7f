"""The bodies of ``canopy graph continue|pause|stop|reset``: imported when one of these
commands runs, not when :mod:`canopy.cli.control_cmds` builds them for ``--help``.

Each command is checked against the store first (:mod:`canopy.ops.control_checks`): a
refusal costs no more than the store read. Only a command that applies loads asyncio and
the control operation, which talks to Temporal (see docs/control.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from canopy.cli.render import emit, print_line, spinner
from canopy.cli.views import blocker_text
from canopy.ops import control_checks as checks

if TYPE_CHECKING:
    from canopy.ops.control_checks import Steering
    from canopy.store.engine import Store


def continue_run(
    store: Store, graph: str, mode: str, node: str | None, spec: str | None, as_json: bool
) -> None:
    """``graph continue``: resume a paused graph."""
    steering = checks.check_continue(store, graph, mode, node, spec)
    _steer(store, f"continuing {graph}", steering, as_json)


def pause(store: Store, graph: str, as_json: bool) -> None:
    """``graph pause``: pause a running graph at the next spec boundary."""
    _steer(store, f"pausing {graph}", checks.check_pause(store, graph), as_json)


def stop(store: Store, graph: str, as_json: bool) -> None:
    """``graph stop``: kill the node in flight, mark its spec interrupted and pause."""
    _steer(store, f"stopping {graph}", checks.check_stop(store, graph), as_json)


def reset(store: Store, graph: str, as_json: bool) -> None:
    """``graph reset``: return the graph to idle."""
    _steer(store, f"resetting {graph}", checks.check_reset(store, graph), as_json)


def _steer(store: Store, doing: str, steering: Steering, as_json: bool) -> None:
    """Carry out a checked command with a spinner on stderr, then print its outcome."""
    import asyncio

    from canopy.ops import control

    with spinner(f"{doing}…"):
        result = asyncio.run(control.steer(store, steering))
    emit(result, as_json, lambda: _show(result))


def _show(result: dict[str, Any]) -> None:
    if result["signal"] is not None:
        print_line(f"sent {result['signal']} to {result['workflow_id']}")
    else:
        print_line("reset in the store (no workflow to signal)")
    print_line(f"{result['name']}: {result['status']}")
    if result["blocker"]:
        print_line(f"blocker: {blocker_text(result['blocker'])}")
    if result["note"]:
        print_line(f"note: {result['note']}")
