"""Identifier generation: ``<kind>-<random suffix>``.

The suffix comes from the operating system's randomness, as :func:`secrets.choice` draws
it, through :class:`random.SystemRandom` directly: :mod:`secrets` also imports
:mod:`hmac`, :mod:`hashlib` and :mod:`base64`, which every CLI write would pay for.
"""

from random import SystemRandom

ID_KINDS = ("spec", "graph", "queue", "run", "sess", "msg", "sched")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_SUFFIX_LENGTH = 10
_CHOICE = SystemRandom().choice


def new_id(kind: str) -> str:
    """A fresh id such as ``spec-4k2m9x0qaz``; ``kind`` must be one of :data:`ID_KINDS`."""
    if kind not in ID_KINDS:
        raise ValueError(f"unknown id kind {kind!r}")
    suffix = "".join(_CHOICE(_ALPHABET) for _ in range(_SUFFIX_LENGTH))
    return f"{kind}-{suffix}"
