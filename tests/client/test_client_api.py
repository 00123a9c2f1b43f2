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


def _modules() -> list[str]:
    """Every module of ``src/mcpkit``, by its path under it (``server/server.py``)."""
    return sorted(path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py"))


def test_module_sizes() -> None:
    too_long = []
    for module in _modules():
        lines = len((SRC / module).read_text(encoding="utf-8").splitlines())
        if lines >= MAX_MODULE_LINES:
            too_long.append(f"{module} has {lines} lines")
    assert not too_long, "find a seam to split along: " + "; ".join(too_long)


#: What a comment or docstring must not carry: a timing figure (``~0.3 µs``), which
#: belongs in bench/RESULTS.md beside how it was measured, or this project's issue
#: number (the reason itself is what the reader needs).
NOT_A_CONTRACT = re.compile(r"\d\s*(?:µs|us\b)|\bissue #\d+", re.IGNORECASE)


def test_comments_state_contracts() -> None:
    found = []
    for module in _modules():
        text = (SRC / module).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            match = NOT_A_CONTRACT.search(line)
            if match:
                found.append(f"{module}:{number} {match.group(0)!r}")
    assert not found, "figures or issue numbers in the source: " + "; ".join(found)
