"""Entry point of the ``canopy`` console script.

Hot read-only commands go through :mod:`cli.fastlane` (stdlib only, no typer, no
SQLAlchemy, no temporalio); everything else builds the typer app. A refusal from any
operation becomes one line on stderr and exit code 1.
"""

import os
import sys

from canopy.errors import Refused
from cli.render import refuse


def run(args: list[str]) -> int:
    """Run one command; its exit code."""
    try:
        from cli import fastlane

        if fastlane.try_run(args):
            return 0
        from cli.app import app

        app(args=args, prog_name="canopy")
    except SystemExit as exit_request:
        code = exit_request.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Refused as refusal:
        refuse(str(refusal))
        return 1
    return 0


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
