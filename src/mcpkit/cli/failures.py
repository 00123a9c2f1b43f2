"""What a failed ``mcpkit list | call | read | prompt | inspect`` prints: for a URL that is
not an MCP endpoint, what answered there instead; for a server file whose import failed,
``mcpkit serve``'s own report; else the error as it was raised."""

from __future__ import annotations

import argparse

__all__ = ["diagnose_url", "explain"]


def explain(args: argparse.Namespace, exc: Exception, said: str = "") -> str:
    """What to print for a failed command: for a URL that is not an MCP endpoint, one
    line naming what answered instead (and where mcpkit serves, after a 404); for a
    server file whose import failed, ``mcpkit serve``'s own report; else the error."""
    target = getattr(args, "resolved_target", None)
    said = said or str(exc)
    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        return diagnose_url(target, exc) or said
    if isinstance(target, str):
        return _served_file_error(said) or said
    return said


def diagnose_url(url: str, exc: Exception) -> str | None:
    """One line for an answer that is not MCP, or None when ``exc`` says enough."""
    from ..client import ServerError
    from ..transports.client_base import HttpStatusError, ProtocolViolationError

    status = getattr(exc, "http_status", None) or getattr(exc, "status", None)
    hint = _endpoint_hint(url)
    if status == 404 and isinstance(exc, (ServerError, HttpStatusError)):
        return f"no MCP endpoint at {url} (HTTP 404){hint}"
    if not isinstance(exc, (HttpStatusError, ProtocolViolationError)):
        return None
    answer = _probe(url)
    if answer is None:
        return None
    code, content_type = answer
    return f"{url} is not an MCP endpoint: it answers HTTP {code} with {content_type}{hint}"


def _endpoint_hint(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.path.rstrip("/").endswith("/mcp"):
        return ""
    suggested = urlunsplit((parts.scheme, parts.netloc, "/mcp", "", ""))
    return f"; mcpkit servers answer at /mcp: try {suggested}"


def _probe(url: str) -> tuple[int, str] | None:
    """The status and content type a POST of JSON gets from ``url`` (how an MCP client
    talks), or None when it cannot be asked."""
    import httpx

    try:
        answer = httpx.post(
            url,
            content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            timeout=5,
        )
    except httpx.HTTPError:
        return None
    content_type = answer.headers.get("content-type", "no content type").split(";")[0]
    return answer.status_code, content_type.strip() or "no content type"


#: How a stdio client's error quotes the server's stderr, and the line ``mcpkit serve``
#: writes when the target cannot be loaded.
_QUOTED = "  | "
_SERVE_SAID = "mcpkit serve: "


def _served_file_error(text: str) -> str | None:
    """``mcpkit serve``'s own report (its first line and what follows), when the server
    process we started for a file or module target failed with one; else None."""
    quoted = [line[len(_QUOTED) :] for line in text.splitlines() if line.startswith(_QUOTED)]
    for index, line in enumerate(quoted):
        if line.startswith(_SERVE_SAID):
            return "\n".join([line[len(_SERVE_SAID) :], *quoted[index + 1 :]])
    return None
