"""The one exception type for refused operations.

Every operation validates before it writes; a refusal is a :class:`Refused` carrying a
single line that names what was wrong. Front ends print it (CLI: stderr, exit 1) or
return it as a tool error (MCP), so the wording is identical everywhere.
"""


class Refused(Exception):
    """An operation refused its input; nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
