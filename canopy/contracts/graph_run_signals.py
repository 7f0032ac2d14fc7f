"""The names the GraphRunV2 workflow is steered by: its signals, its query and the continue
modes (part of :mod:`canopy.contracts.graph_run`, which re-exports them).

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
"""Every signal a graph run takes; anything else sent to it is ignored, and recorded."""
