"""Identifier generation: ``<kind>-<random suffix>`` (DESIGN §4)."""

import secrets

ID_KINDS = ("spec", "graph", "queue", "run", "sess", "msg")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_SUFFIX_LENGTH = 10


def new_id(kind: str) -> str:
    """A fresh id such as ``spec-4k2m9x0qaz``; ``kind`` must be one of :data:`ID_KINDS`."""
    if kind not in ID_KINDS:
        raise ValueError(f"unknown id kind {kind!r}")
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(_SUFFIX_LENGTH))
    return f"{kind}-{suffix}"
