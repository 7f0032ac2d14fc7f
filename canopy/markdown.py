"""Markdown pieces for text that a markdown renderer shows: the Temporal UI's summaries
and details, and the TUI's detail pages.

A command shown as plain markdown is not the command: the UI turns ``--mode`` into an en
dash and ``*`` into emphasis, so what a person copies fails. In a code span it is shown,
and copied, as written.
"""

import re

_BACKTICKS = re.compile("`+")


def code_span(text: str) -> str:
    """``text`` as an inline code span, fenced by more backticks than it holds in a row
    (and padded when it starts or ends with one), so no text can end the span early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
