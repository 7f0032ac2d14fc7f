"""Text shown on a terminal, with everything a terminal would act on escaped.

What users and agents typed, what a store written by an older Canopy still holds, and
what an agent printed may carry escape sequences, NULs, bidirectional overrides and lone
surrogates. Shown as they are, ``\\x1b]0;title\\x07`` retitles the terminal and a newline
inside a one-line field forges another line. Both front ends show such text: the CLI's
printers (:mod:`canopy.cli.render`) and the TUI's log view. So the escaping lives here,
below both, and each shows exactly the same characters for the same text.

Stdlib only and cheap to import: every CLI command imports this.
"""

from __future__ import annotations

import re

_ACTED_ON = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
"""What a terminal would act on rather than show: C0 but tab and newline, DEL, C1, the
line and paragraph separators, the bidirectional overrides (which reorder what follows,
"Trojan Source") and lone surrogates (which cannot even be encoded)."""
_UNPRINTABLE = f"[{_ACTED_ON}]"
_UNPRINTABLE_IN_LINE = f"[{_ACTED_ON}\t\n]"
"""The same plus tab and newline, for text that must stay on one line."""
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character a terminal would act on shown as its escape.

    ``\\x1b`` for ESC, ``\\n`` for a newline. ``multiline`` keeps newlines and tabs, for
    bodies and replies that are meant to span lines.
    """
    if text.isprintable():  # the usual case; none of the characters above is printable
        return text
    return re.sub(_UNPRINTABLE if multiline else _UNPRINTABLE_IN_LINE, _escape, text)
