"""The ``ping`` activity: proves a worker serves this host's agents task queue.

``canopy up`` runs the Ping workflow as its readiness check; the workflow sends this
activity to the per-host agents queue, so a reply means both queues are being polled.
"""

import socket

from temporalio import activity


@activity.defn(name="ping")
async def ping() -> str:
    """Answer with the host name, showing which machine served the agents queue."""
    return f"pong from {socket.gethostname()}"
