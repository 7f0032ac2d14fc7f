"""What a harness reported used, worded for people: token counts and costs.

The CLI's tables and the platform adapters' log views (``canopy graph logs``) word usage
alike, so both take it from here, below every layer that shows it. Stdlib only and cheap
to import: ``graph info`` draws its tables with it.
"""

from __future__ import annotations


def used_text(
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None,
    cache_write_tokens: int | None,
    cost_usd: float | None,
) -> str:
    """``1.2k in · 340 out · 5k cache read · $0.25``: what a harness reported used, in
    one table cell or log line; what it did not report is left out (blank when it reported
    nothing)."""
    parts = [
        f"{count_text(count)} {what}"
        for count, what in (
            (input_tokens, "in"),
            (output_tokens, "out"),
            (cache_read_tokens, "cache read"),
            (cache_write_tokens, "cache write"),
        )
        if count is not None
    ]
    if cost_usd is not None:
        parts.append(cost_text(cost_usd))
    return " · ".join(parts)


def count_text(count: int) -> str:
    """``950``, ``1.2k``, ``3.4M``: a token count at a glance."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def cost_text(cost_usd: float) -> str:
    """``$12.40``, or ``$0.0031`` for less than a dollar, whose cents would hide it."""
    return f"${cost_usd:.2f}" if cost_usd >= 1 else f"${cost_usd:.4f}"
