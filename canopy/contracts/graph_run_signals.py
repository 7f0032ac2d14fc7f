"""The names the GraphRunV2 workflow is steered by: its signals (and the updates of the
same names), its query and the continue modes (part of :mod:`canopy.contracts.graph_run`,
which re-exports them), and the rule of which command applies in which state.

Apart because they are plain strings: the CLI validates a steering command against the
store before it talks to Temporal, and a refused command should not load pydantic (which
the contract's payload models need) to name what it would have sent.
"""

from typing import Literal, get_args

ContinueMode = Literal["recheck", "run_from_node", "skip_next_spec"]
CONTINUE_MODES: tuple[str, ...] = get_args(ContinueMode)

SIGNAL_CONTINUE = "continue_run"
SIGNAL_SKIP_NEXT_SPEC = "skip_next_spec"
SIGNAL_PAUSE = "pause"
SIGNAL_STOP = "stop"
SIGNAL_RESET = "reset"
QUERY_STATUS = "status"
CONTROL_SIGNALS = (SIGNAL_CONTINUE, SIGNAL_SKIP_NEXT_SPEC, SIGNAL_PAUSE, SIGNAL_STOP, SIGNAL_RESET)
"""Every signal a graph run takes; anything else sent to it is ignored, and recorded. Each
is an update of the same name too, which answers once the run has acted on it."""
STEERING_REFUSED = "SteeringRefused"
"""The error type of an update the run refused (its message is the one-line refusal)."""


def refusal(command: str, graph: str, status: str) -> str | None:
    """Why ``command`` (a signal name) does not apply to graph ``graph`` in ``status``
    (``running``, ``paused``, ``idle``, ``completed``, ``failed``), in one line; ``None``
    when it applies.

    The one statement of these rules: the store-side check asks it with the store's
    status before anything is sent, and the run's update validator with its own.
    """
    if command in (SIGNAL_CONTINUE, SIGNAL_SKIP_NEXT_SPEC) and status != "paused":
        return f"graph {graph} is {status}, not paused; continue applies to a paused graph"
    if command in (SIGNAL_PAUSE, SIGNAL_STOP):
        if status == "paused":
            in_flight = "; nothing is in flight to stop" if command == SIGNAL_STOP else ""
            return f"graph {graph} is already paused{in_flight}"
        if status != "running":
            return f"graph {graph} is {status}; nothing to {command}"
    if command == SIGNAL_RESET and status == "idle":
        return f"graph {graph} is idle; nothing to reset"
    return None
