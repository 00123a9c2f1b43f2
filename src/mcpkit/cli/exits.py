"""The command line's exit statuses, one table for every subcommand (``mcpkit --help``)."""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
#: The tool answered ``isError``, or the server refused the request.
EXIT_FAILURE: Final = 1
#: Bad usage: unknown option, malformed ``key=value``, unknown tool, missing extra.
EXIT_USAGE: Final = 2
#: The server could not be started or reached, or the connection failed mid-way.
EXIT_CONNECTION: Final = 3
#: Our output was closed early (``mcpkit list ... | head``), as a shell's SIGPIPE.
EXIT_BROKEN_PIPE: Final = 141

EXIT_CODES_HELP = """\
exit status: 0 ok, 1 the tool or server reported an error, 2 bad usage (or a missing
optional extra), 3 the server could not be reached or the connection failed."""


class UsageError(Exception):
    """The command line itself is wrong; the message says how."""
