"""The ``ping`` activity: proves a worker serves this host's agents task queue.

``canopy up`` runs the Ping workflow as its readiness check; the workflow sends this
activity to the per-host agents queue, so a reply means both queues are being polled.
"""

from temporalio import activity

from canopy.temporal.client import this_host


@activity.defn(name="ping")
async def ping() -> str:
    """Answer with the name this worker serves as (``CANOPY_HOST``, else the host name):
    the name in the agents queue it polls, which is what a health check asks about."""
    return f"pong from {this_host()}"
