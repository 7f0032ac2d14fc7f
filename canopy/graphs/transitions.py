"""Where a node goes next: one rule for the engine and for ``graph info``.

It reads the nodes as the store keeps them (JSON objects), so ``graph info`` applies it
without loading the graph model.
"""

from collections.abc import Mapping, Sequence
from typing import Any


def default_next(
    nodes: Sequence[Mapping[str, Any]], index: int, conflict_resolver: str | None = None
) -> str | None:
    """Where a node without ``next`` goes on success (``None``: the spec completes).

    The following node in the list, skipping failure handlers (nodes some ``on_failure``
    points at) and the graph's ``conflict_resolver``, which run only when sent to. So
    ``implement, test (on_failure: fix), fix (next: test)`` completes the spec once
    ``test`` passes instead of falling through into ``fix``.
    """
    handlers = {node.get("on_failure") for node in nodes if node.get("on_failure")}
    handlers.add(conflict_resolver)
    for node in nodes[index + 1 :]:
        if node["name"] not in handlers:
            return str(node["name"])
    return None
