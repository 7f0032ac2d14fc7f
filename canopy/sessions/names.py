"""Generated session names: ``adjective-noun``, easy to say and to type.

Names are for people and name-targeted hooks; they need not be unique, but a generated
one avoids the names live sessions hold, so a fresh name never makes a hook ambiguous.
"""

import secrets
from collections.abc import Collection

ADJECTIVES = (
    "amber", "brave", "brisk", "calm", "clever", "crisp", "deft", "eager", "fair", "fleet",
    "gentle", "glad", "golden", "hardy", "keen", "kind", "lively", "lucid", "mellow", "merry",
    "nimble", "noble", "patient", "plucky", "quick", "quiet", "rapid", "sly", "steady", "sunny",
    "swift", "tidy", "vivid", "warm", "wise", "witty",
)  # fmt: skip
NOUNS = (
    "alder", "aspen", "badger", "beech", "birch", "cedar", "comet", "crane", "falcon", "fern",
    "finch", "fox", "hazel", "heron", "juniper", "lark", "linden", "lynx", "maple", "marten",
    "oak", "otter", "owl", "pine", "plover", "raven", "robin", "rowan", "sparrow", "spruce",
    "stoat", "swallow", "walnut", "willow", "wren", "yew",
)  # fmt: skip
_TRIES = 50


def generated_name(taken: Collection[str]) -> str:
    """A random ``adjective-noun`` not in ``taken`` (a numbered one if all tries collide)."""
    for _ in range(_TRIES):
        name = f"{secrets.choice(ADJECTIVES)}-{secrets.choice(NOUNS)}"
        if name not in taken:
            return name
    base = f"{secrets.choice(ADJECTIVES)}-{secrets.choice(NOUNS)}"
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"
