"""Sending a notification through Apprise: the one-liner a command hook runs to reach a
phone or a chat when a run needs someone (``canopy notify``).

Apprise speaks to ntfy, Slack, Discord, Telegram, email, ``json://`` webhooks and many
more, each from one URL. Those URLs carry tokens and passwords, so nothing here ever
prints, logs or returns one: a URL is named by its position and its service, Apprise's
own log (which names hosts and sometimes paths) is silenced, and a refusal says which
URL and what kind of problem, never the URL. Each URL is sent to on its own, so one
that fails does not hide whether the others were delivered.
"""

from __future__ import annotations

import logging
from typing import Any

from canopy.errors import Refused
from canopy.limits import text_problem

TITLE_MAX_CHARS = 250
"""A title longer than this is refused: every service shows a title as one short line."""
BODY_MAX_CHARS = 32 * 1024
"""The longest body sent; services cut far shorter ones, and a hook's ``{{blocker}}`` or
``{{completed_specs}}`` fits well within it."""


def notify(urls: list[str], title: str, body: str) -> dict[str, Any]:
    """Send ``title`` and ``body`` to every URL in ``urls``; which services got it.

    Refused, before anything is sent, when a URL is not one Apprise can send to or the
    text is not sendable; refused after sending when any URL's send failed, naming the
    failed ones by position and service (``URL 2 (ntfy)``), with the ones that succeeded.
    """
    if not urls:
        raise Refused("notify needs at least one Apprise URL")
    _check_text("title", title, TITLE_MAX_CHARS)
    _check_text("body", body, BODY_MAX_CHARS)
    if not title and not body.strip():
        raise Refused("notify needs a --title or a --body: there is nothing to send")
    services = _services(urls)
    sent: list[str] = []
    failed: list[str] = []
    for position, (scheme, service) in enumerate(services, start=1):
        label = f"URL {position} ({scheme})"
        (sent if service.notify(body=body or title, title=title) else failed).append(label)
    if failed:
        delivered = f"; sent to {', '.join(sent)}" if sent else ""
        raise Refused(
            f"notify: {', '.join(failed)} not sent: the service refused it or could not be"
            f" reached (the URL is not shown: it may hold a token){delivered}"
        )
    return {"sent": len(sent), "services": [scheme for scheme, _service in services]}


def _check_text(what: str, text: str, max_chars: int) -> None:
    problem = text_problem(text)
    if problem is not None:
        raise Refused(f"notify --{what}: {problem}")
    if len(text) > max_chars:
        raise Refused(f"notify --{what}: at most {max_chars} characters (this one has {len(text)})")


def _services(urls: list[str]) -> list[tuple[str, Any]]:
    """Each URL's scheme (which names the service and holds no secret) and its Apprise
    service; a refusal names the first URL Apprise cannot use by position and scheme."""
    import apprise  # about 100 ms: only `canopy notify` pays it

    _silence(logging.getLogger("apprise"))
    services = []
    for position, url in enumerate(urls, start=1):
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        service = apprise.Apprise.instantiate(url) if scheme.isalnum() else None
        if service is None:
            known = f"scheme {scheme}://" if scheme.isalnum() else "no scheme://"
            raise Refused(
                f"notify: URL {position} is not one Apprise can send to ({known}); see"
                " https://github.com/caronc/apprise/wiki for the URL of each service"
            )
        services.append((scheme, service))
    return services


def _silence(logger: logging.Logger) -> None:
    """Keep Apprise's log, which names hosts and paths of the URLs, out of every output."""
    logger.handlers = [logging.NullHandler()]
    logger.propagate = False
