"""Entry point of the ``canopy`` console script.

Hot read-only commands go through :mod:`cli.fastlane` (stdlib only, no typer, no
SQLAlchemy, no temporalio); everything else builds the typer app. A refusal from any
operation becomes one line on stderr and exit code 1.
"""

import sys

from canopy.errors import Refused
from cli.render import refuse


def main(argv: list[str] | None = None) -> None:
    """Run one CLI command and exit with its status."""
    args = sys.argv[1:] if argv is None else argv
    try:
        from cli import fastlane

        if fastlane.try_run(args):
            sys.exit(0)
        from cli.app import app

        app(args=args, prog_name="canopy")
    except Refused as refusal:
        refuse(str(refusal))
        sys.exit(1)


if __name__ == "__main__":
    main()
