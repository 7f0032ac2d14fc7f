"""``canopy doctor``: will the agents this data dir uses run, and do what they should."""

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_block
from canopy.cli.store import open_store
from canopy.ops.doctor import doctor, report_lines


def doctor_command(as_json: JsonFlag = False) -> None:
    """Check the agent CLIs in use: installed, version, argv, permissions, sign-in.

    Every platform a graph (node, ensemble member, agent hook) or a live session uses is
    checked at each permission level it runs at; with nothing used yet, the built-in
    ones. Exits 1 when something found would stop a run. No model is called: each CLI
    is asked its version and sign-in state, and given Canopy's argv with no prompt, which
    it checks before it would call one.
    """
    report = doctor(open_store())
    emit(report.as_json(), as_json, lambda: print_block("\n".join(report_lines(report))))
    if not report.ok:
        raise typer.Exit(1)
