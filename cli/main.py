"""Entry point of the ``canopy`` console script.

Every command goes through the typer app, which loads only the command it runs (see
:mod:`canopy.cli.app`). Whatever happens, a
failed command prints one line on stderr and exits 1: a refusal from any operation as
``error: <reason>``, anything else (a bug, the store refusing a racing write) as the one
line :func:`canopy.errors.unexpected_error_line` makes of it, with the traceback only
when ``CANOPY_DEBUG=1`` asks for it. With ``--json`` the same line is also printed as
``{"error": …}`` on stdout (:func:`canopy.cli.render.refuse`); typer's usage errors too
(:class:`canopy.cli.app.LazyRoot`).
"""

import os
import sys

from canopy.cli.render import json_requested, refuse
from canopy.errors import Refused, debug_requested, unexpected_error_line
from canopy.limits import text_problem


def run(args: list[str]) -> int:
    """Run one command; its exit code."""
    as_json = json_requested(args)
    try:
        _check_arguments(args)
        from canopy.cli.app import app

        app(args=args, prog_name="canopy")
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Refused as refusal:
        refuse(str(refusal), as_json)
        return 1
    except Exception as error:  # the last resort: one line, never a traceback
        if debug_requested():
            import traceback  # only here: loading it costs every command a few ms

            traceback.print_exc()
        refuse(unexpected_error_line(error), as_json)
        return 1
    return 0


def _check_arguments(args: list[str]) -> None:
    """Refuse an argument no command could use: bytes that are not UTF-8 (Python hands
    them over as lone surrogates, which no store or terminal can take) or a NUL (only
    possible in-process, but then it would end up in a path or the store)."""
    for index, arg in enumerate(args, start=1):
        problem = text_problem(arg)
        if problem is not None:
            raise Refused(f"argument {index}: {problem}")


def main(argv: list[str] | None = None) -> None:
    """Run one CLI command and exit with its status.

    After talking to Temporal the process leaves with ``os._exit``: the SDK's Rust threads
    can abort a finalizing interpreter (temporalio/sdk-python#300), which would turn a
    successful command into exit code 134.
    """
    code = run(sys.argv[1:] if argv is None else argv)
    if "temporalio" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
