"""What kind a node is and which mode a hook has, read from the fields its JSON sets.

The one place both are decided: the graph model's discriminators call these on the input
they validate, and readers of a stored graph (``graph info``'s tables) call them on the
stored JSON. Stdlib only, so such a reader need not load pydantic and the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AGENT_NODE, ENSEMBLE_NODE, COMMAND_NODE = "agent node", "ensemble node", "command node"
AGENT_HOOK, COMMAND_HOOK, INTERACTIVE_HOOK = "agent hook", "command hook", "interactive hook"


def given(data: Mapping[str, Any], *fields: str) -> list[bool]:
    """Which of ``fields`` ``data`` sets (``null`` counts as not set, as it always has)."""
    return [data.get(field) is not None for field in fields]


def node_kind(data: Mapping[str, Any]) -> str:
    """``agent node`` (it names a platform), ``ensemble node`` or ``command node``.

    For a well-formed node: the model refuses every mix of kinds before asking.
    """
    platform, ensemble = given(data, "platform", "ensemble")
    return AGENT_NODE if platform else ENSEMBLE_NODE if ensemble else COMMAND_NODE


def hook_mode(data: Mapping[str, Any]) -> str:
    """``agent hook`` (it names a platform), ``command hook`` or ``interactive hook``.

    For a well-formed hook: the model refuses every mix of modes before asking.
    """
    platform, command = given(data, "platform", "command")
    return AGENT_HOOK if platform else COMMAND_HOOK if command else INTERACTIVE_HOOK
