"""``mcpkit dev FILE``: serve over HTTP and restart whenever a source file changes.

The server runs as a child ``mcpkit serve FILE --http`` process that watchfiles (the
library uvicorn's own reload uses) restarts on every change to a Python, JSON, TOML, YAML,
HTML, Markdown or SQL file below the watched folders (not logs or the state), so a
syntax error in an edit shows its traceback and the next save tries again.  The state
backend defaults to memory: a development server starts clean every time.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import shutil
import sys
from pathlib import Path

from ..types.extras import require
from .command import Command, add_list_option
from .exits import EXIT_OK, EXIT_USAGE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="path/to/file.py[:name] or package.module[:name]")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--path", default="/mcp", help="endpoint path (default /mcp)")
    add_list_option(
        p, "--watch", metavar="DIR", help="folder to watch (repeatable; default: the file's folder)"
    )
    p.add_argument("--state", default="memory:", help="state backend URL (default memory:)")


def run(args: argparse.Namespace) -> int:
    watchfiles = require("watchfiles", "cli", "mcpkit dev")
    spec = args.target.partition(":")[0]
    is_file = spec.endswith(".py") or "/" in spec
    if is_file and not Path(spec).is_file():
        print(f"mcpkit dev: no such file: {spec}", file=sys.stderr)
        return EXIT_USAGE
    watch = args.watch or [str(Path(spec).resolve().parent if is_file else Path.cwd())]
    url = f"http://127.0.0.1:{args.port}{args.path}"
    command = [
        sys.executable,
        "-m",
        "mcpkit",
        "serve",
        args.target,
        "--http",
        "--port",
        str(args.port),
        "--path",
        args.path,
        "--state",
        args.state,
    ]
    print(
        f"mcpkit dev: serving {args.target} at {url}, restarting on changes in "
        f"{', '.join(watch)} (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    if shutil.which("npx"):
        print(
            f"  inspect it:  npx @modelcontextprotocol/inspector --transport http "
            f"--server-url {url}",
            file=sys.stderr,
            flush=True,
        )
    logging.getLogger("watchfiles.main").addFilter(_quiet_restarts)
    with contextlib.suppress(KeyboardInterrupt):
        # Source and data files only: a log written into the folder (`mcpkit dev demo.py >
        # dev.log`) or the SQLite state must not restart the server in a loop.
        quiet = watchfiles.PythonFilter(extra_extensions=_WATCHED)
        watchfiles.run_process(
            *watch,
            target=shlex.join(command),
            target_type="command",
            callback=_changed,
            watch_filter=quiet,
        )
    return EXIT_OK


#: Besides Python files, what a server commonly reads at start-up.
_WATCHED = (".json", ".toml", ".yaml", ".yml", ".html", ".md", ".sql")


def _quiet_restarts(record: logging.LogRecord) -> bool:
    """Drop watchfiles' "process already dead, exit code: N": it restarts a server that
    had already exited (its file failed to import), whose own error said so already."""
    return not record.getMessage().startswith("process already dead")


def _changed(changes: set[tuple[object, str]]) -> None:
    names = sorted({Path(path).name for _, path in changes})
    print(f"mcpkit dev: {', '.join(names[:5])} changed; restarting", file=sys.stderr, flush=True)


COMMAND = Command(
    "dev",
    help="serve over HTTP with reload on file change (needs the 'cli' extra)",
    description="Serve a server file over Streamable HTTP and restart it when a file "
    "under its folder changes.",
    examples=["mcpkit dev demo.py", "mcpkit dev demo.py:server --port 9000 --watch src/"],
    notes="With npx on PATH it also prints the MCP Inspector command to open the server in.",
    arguments=add_arguments,
    run=run,
)
