"""Where a node goes next: one rule for the engine and for ``graph info``."""

from collections.abc import Sequence

from canopy.graphs.model import Node


def default_next(nodes: Sequence[Node], index: int) -> str | None:
    """Where a node without ``next`` goes on success (``None``: the spec completes).

    The following node in the list, skipping failure handlers (nodes some ``on_failure``
    points at), which run only when sent to. So ``implement, test (on_failure: fix),
    fix (next: test)`` completes the spec once ``test`` passes instead of falling through
    into ``fix``.
    """
    handlers = {node.on_failure for node in nodes if node.on_failure}
    for node in nodes[index + 1 :]:
        if node.name not in handlers:
            return node.name
    return None
