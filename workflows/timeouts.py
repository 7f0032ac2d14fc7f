"""Activity deadlines the workflows share."""

from datetime import timedelta

BOOKKEEPING_TIMEOUT = timedelta(minutes=1)
"""A store write or read on the main queue: seconds at worst, so a minute means a stuck
worker, and the retry goes to another."""
