"""The installed Canopy's version, one answer for ``canopy --version`` and the MCP
server's ``serverInfo``.

Read from the package metadata (``pyproject.toml``'s ``version``), so a release needs the
number changed in one place only.
"""

from importlib.metadata import PackageNotFoundError, version


def canopy_version() -> str:
    """The version pip installed, or ``unknown`` when run from a tree never installed."""
    try:
        return version("canopy")
    except PackageNotFoundError:
        return "unknown"
