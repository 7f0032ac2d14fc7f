"""``canopy usage``: what the harnesses reported node runs and hook runs used."""

from typing import Annotated

import typer

from canopy.cli import views
from canopy.cli.options import JsonFlag
from canopy.cli.render import emit
from canopy.cli.store import open_store
from canopy.ops.usage import usage_report


def usage_command(
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only runs that ended this recently: 24h, 7d, 30m, 2w."),
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", help="Only this graph's runs (name, id or prefix).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Tokens and cost the harnesses reported, summed by platform and model."""
    result = usage_report(open_store(), since, graph)
    emit(result, as_json, lambda: views.show_usage(result))
