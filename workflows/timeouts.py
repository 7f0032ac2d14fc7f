"""Activity deadlines the workflows share."""

from datetime import timedelta

BOOKKEEPING_TIMEOUT = timedelta(minutes=1)
"""A store write or read on the main queue: seconds at worst, so a minute means a stuck
worker, and the retry goes to another."""

PENDING_RECOUNT = timedelta(seconds=5)
"""How often a run counts its pending specs for the Temporal UI's ``spec 3 of 10``, at
most. Counting them looks up every member of the queue: on a 10,000-member queue ~5 ms,
more than the rest of a spec's store calls together. Between counts the total is kept
(one fewer pending per spec closed), so a fast drain counts every few seconds and a run
whose specs take minutes counts before every spec."""

GIT_TIMEOUT = timedelta(minutes=2)
"""``git status`` of a workdir, when a parked run checks again that its tree is clean."""

SCHEDULED_START_TIMEOUT = timedelta(minutes=2)
"""A scheduled fire's start of a graph run: the launch guard (``git status``), up to 10 s
waiting for the host's worker and 10 s for the graph's previous workflow to close."""
