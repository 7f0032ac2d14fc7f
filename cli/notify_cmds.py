"""``canopy notify``: send a title and a body to phones and chats through Apprise."""

from typing import Annotated

import typer

from canopy.cli.options import JsonFlag
from canopy.cli.render import emit, print_line


def notify_command(
    urls: Annotated[
        list[str],
        typer.Argument(
            help="Apprise URLs (ntfy://, slack://, json://, mailto://, …); pass them from"
            " environment variables so no token lands in a graph or a log.",
            metavar="URL",
            show_default=False,
        ),
    ],
    title: Annotated[str, typer.Option("--title", help="One short line.")] = "",
    body: Annotated[str, typer.Option("--body", help="The message.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Send a notification through Apprise (ntfy, Slack, Discord, email, webhooks, …)."""
    from canopy.ops.notify import notify

    result = notify(urls, title, body)
    emit(result, as_json, lambda: print_line(f"sent to {', '.join(result['services'])}"))
