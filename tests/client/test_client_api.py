"""The client's public surface and its place in the layers, and the shape of the source.

``mcpkit.client.__all__`` is the promise (a change to it should be deliberate), and the
import rules of docs/architecture.md hold: the client imports transports and below, never
the server, host or gateway; the client transports never import the client.  Every module
of ``src/mcpkit`` stays under :data:`MAX_MODULE_LINES`, and its comments state contracts:
no timing figures (they live in bench/RESULTS.md) and no issue numbers.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from fnmatch import fnmatchcase
from pathlib import Path

import mcpkit.client
from mcpkit.client.options import ProcessOptions
from mcpkit.transports.client_stdio import StdioTransport

SRC = Path(mcpkit.client.__file__).resolve().parents[1]

PUBLIC = {
    "FeatureOptions",
    "HttpClientOptions",
    "ProcessOptions",
    "ProtocolOptions",
    "TimeoutOptions",
    "CallToolResult",
    "Client",
    "ClientError",
    "ClientGroup",
    "ClientOptions",
    "CompleteResult",
    "ConfigError",
    "ConnectError",
    "ConnectionClosedError",
    "CreateMessageResult",
    "DiscoverResult",
    "ElicitResult",
    "ElicitationHandler",
    "EraCache",
    "GetPromptResult",
    "HttpStatusError",
    "Implementation",
    "InputRequestError",
    "InvalidResultError",
    "LogHandler",
    "Notification",
    "NotificationHandler",
    "ProgressCallback",
    "Prompt",
    "ProtocolViolationError",
    "ReadResourceResult",
    "RequestTimeoutError",
    "Resource",
    "ResourceTemplate",
    "ResultCache",
    "Root",
    "RootsProvider",
    "SamplingHandler",
    "ServerError",
    "ServerInfo",
    "ServerStartupError",
    "SessionExpiredError",
    "Subscription",
    "Task",
    "TaskCancelled",
    "TooManyInputRounds",
    "Tool",
    "ToolError",
    "TransportError",
    "UrlElicitationHandler",
    "UrlElicitationRequiredError",
    "VersionNegotiationError",
    "prompt_ref",
    "resource_ref",
}


def test_public_names() -> None:
    assert set(mcpkit.client.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(mcpkit.client, name) is not None
    assert issubclass(mcpkit.client.ServerError, mcpkit.client.ClientError)
    assert issubclass(mcpkit.client.ServerError, mcpkit.McpError)
    assert issubclass(mcpkit.client.RequestTimeoutError, TimeoutError)


def test_process_options_are_the_stdio_transports_arguments() -> None:
    """A client's ProcessOptions reach StdioTransport field by field, by name: each field
    must be a keyword argument of the transport, with the same default."""
    arguments = inspect.signature(StdioTransport).parameters
    for option in dataclasses.fields(ProcessOptions):
        assert option.name in arguments, option.name
        assert arguments[option.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert arguments[option.name].default == option.default, option.name


def imports_of(path: Path) -> set[str]:
    """Absolute module names imported by a module of the mcpkit package."""
    package = path.relative_to(SRC.parent).with_suffix("").parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_layers() -> None:
    client_files = sorted((SRC / "client").glob("*.py"))
    transport_files = sorted((SRC / "transports").glob("client_*.py"))
    assert client_files and transport_files
    for path in client_files:
        bad = {
            m
            for m in imports_of(path)
            if under(m, "mcpkit.server", "mcpkit.gateway", "mcpkit.host", "mcpkit.cli")
        }
        assert not bad, f"{path.name} imports {bad}"
        assert "mcpkit" not in imports_of(path), f"{path.name} imports the mcpkit root"
    for path in transport_files:
        bad = {
            m
            for m in imports_of(path)
            if under(m, "mcpkit.client", "mcpkit.server", "mcpkit.gateway")
        }
        assert not bad, f"{path.name} imports {bad}"


#: A module of ``src/mcpkit`` holds fewer lines than this: past it, find a seam to split along.
MAX_MODULE_LINES = 600

#: TEMPORARY: modules other branches were rewriting when the limit went from client/ to all
#: of src/ (the request runner, the stdio, memory and HTTP edges, the fast lane and the
#: gateway's and the server's core).  Shrink this list as those branches merge, until it
#: is empty.  The client modules and client transports were held before and stay held.
NOT_YET_HELD = (
    "runtime/*",
    "transports/stdio*.py",
    "transports/memory.py",
    "transports/http/*",
    "server/server.py",
    "server/middleware/__init__.py",
    "server/middleware/telemetry.py",
)


def _modules() -> list[str]:
    """Every module of ``src/mcpkit``, by its path under it (``server/server.py``)."""
    return sorted(path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py"))


def _not_yet_held(module: str) -> bool:
    return any(fnmatchcase(module, pattern) for pattern in NOT_YET_HELD)


def test_module_sizes() -> None:
    too_long = []
    for module in _modules():
        if _not_yet_held(module):
            continue
        lines = len((SRC / module).read_text(encoding="utf-8").splitlines())
        if lines >= MAX_MODULE_LINES:
            too_long.append(f"{module} has {lines} lines")
    assert not too_long, "find a seam to split along: " + "; ".join(too_long)


def test_the_modules_not_yet_held_exist() -> None:
    """Every entry of the temporary list still names a module (one that went away, or was
    split, leaves the list)."""
    modules = _modules()
    stale = [p for p in NOT_YET_HELD if not any(fnmatchcase(m, p) for m in modules)]
    assert not stale, f"remove from NOT_YET_HELD, no module matches: {stale}"


#: What a comment or docstring must not carry: a timing figure (``~0.3 µs``), which
#: belongs in bench/RESULTS.md beside how it was measured, or this project's issue
#: number (the reason itself is what the reader needs).
NOT_A_CONTRACT = re.compile(r"\d\s*(?:µs|us\b)|\bissue #\d+", re.IGNORECASE)


def test_comments_state_contracts() -> None:
    found = []
    for module in _modules():
        if _not_yet_held(module):
            continue
        text = (SRC / module).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            match = NOT_A_CONTRACT.search(line)
            if match:
                found.append(f"{module}:{number} {match.group(0)!r}")
    assert not found, "figures or issue numbers in the source: " + "; ".join(found)
