"""An MCP server from an OpenAPI description: ``from_openapi(spec, base_url=...)``, and
``from_asgi(app)`` for a FastAPI or Starlette app in the same process.

Every operation becomes a tool (or, by rule, a resource or resource template):

* name: the ``operationId`` (else ``method_path``), made safe (``[A-Za-z0-9_.-]``, at
  most 64 characters) and unique (``_2``, ``_3``...);
* input schema: path, query, header and cookie parameters, and a JSON request body
  (its properties as arguments when it is an object and no name clashes, else one
  ``body`` argument); a name used twice gets its location appended (``id__query``);
* output schema: the JSON schema of the first 2xx response; one that is not an object is
  wrapped as ``{"result": ...}`` (MCP wants an object; the schema's description says so);
* a non-2xx answer is a tool error carrying the status and the body;
* headers: ``headers=`` (API keys, tokens for the API) go on every request, and an
  operation's own header parameter of the same name is not offered to the model.  The
  MCP caller's credentials are never forwarded: the HTTP client is this module's own.

Requests stay under ``base_url`` (where the API key goes): a path key that is not a plain
path (an absolute or protocol-relative URL, ``.`` or ``..`` segments) is refused when the
description is loaded; a path parameter of ``.`` or ``..`` is refused (``/`` and every
other reserved character in one is percent-encoded), and every request's final URL is
checked to be under ``base_url`` before it is sent.  A description given as a URL is
fetched through the SSRF guard of :mod:`mcpkit.auth.client.ssrf` (``spec_policy``;
default: public ``https`` only, each redirect checked again, never to a private,
loopback or link-local address unless the policy allows it).

Routing rules (``route_map``), first match wins; an operation no rule matches is a tool::

    Route(kind="exclude", tags={"internal"})
    Route(kind="resource", methods={"GET"}, pattern=r"^/config$")
    *GET_AS_RESOURCES   # GET without path parameters -> resource, with -> template

Resources are ``openapi://{name}``; templates ``openapi://{name}/{a}/{b}{?q}``.

Reading the description into operations is :mod:`.openapi_operations`; this module makes
them tools, resources and templates and calls the API.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from ..auth.client.ssrf import UrlPolicy
from ..server.registry import ToolResult
from ..server.server import Server
from ..types.codec import DecodeError, decode
from ..types.errors import invalid_params
from .openapi_operations import Operation, load_spec, operations, operator_spec_policy
from .openapi_schema import Document

__all__ = ["GET_AS_RESOURCES", "Route", "from_asgi", "from_openapi", "operator_spec_policy"]

MAX_BODY_TEXT = 20_000


@dataclass(frozen=True)
class Route:
    """A routing rule: operations matching every given condition become ``kind``
    (``"tool"``, ``"resource"``, ``"template"`` or ``"exclude"``)."""

    kind: str = "tool"
    methods: frozenset[str] | set[str] | None = None
    #: A regular expression searched in the path (``/users/{id}``).
    pattern: str | None = None
    #: At least one of these tags.
    tags: frozenset[str] | set[str] | None = None
    #: Only operations with (True) or without (False) path parameters.
    path_params: bool | None = None

    def matches(self, op: Operation) -> bool:
        """True when the operation passes every filter this rule sets (methods, path pattern,
        tags, path parameters)."""
        if self.methods is not None and op.method.upper() not in {m.upper() for m in self.methods}:
            return False
        if self.pattern is not None and not re.search(self.pattern, op.path):
            return False
        if self.tags is not None and not (set(self.tags) & set(op.tags)):
            return False
        return self.path_params is None or self.path_params == bool(op.path_names)


GET_AS_RESOURCES = (
    Route(kind="resource", methods={"GET"}, path_params=False),
    Route(kind="template", methods={"GET"}, path_params=True),
)
"""Route rules that map ``GET`` operations to resources (no path parameters) and resource
templates (with path parameters) instead of tools; other operations stay tools."""


class OutsideBaseUrl(ValueError):
    """A request would leave the API's base URL (a path parameter of ``.`` or ``..``, or
    a final URL that is not under ``base_url``); it is not sent."""


# ---------------------------------------------------------------------- calling


class ApiCaller:
    """Turns a tool call into one HTTP request and its answer into a tool result."""

    def __init__(self, client: httpx.AsyncClient, headers: Mapping[str, str]) -> None:
        self.client = client
        self.headers = dict(headers)

    def request(self, op: Operation, arguments: Mapping[str, Any]) -> httpx.Request:
        path = op.path
        query: list[tuple[str, str | int | float | bool | None]] = []
        headers = dict(self.headers)
        cookies: dict[str, str] = {}
        body: Any = None
        has_body = False
        for arg in op.arguments:
            if arg.name not in arguments:
                continue
            value = arguments[arg.name]
            if arg.location == "path":
                path = path.replace("{" + arg.wire + "}", _segment(arg.name, value))
            elif arg.location == "query":
                values = value if isinstance(value, list) else [value]
                query.extend((arg.wire, _text(v)) for v in values)
            elif arg.location == "header":
                headers[arg.wire] = _text(value)
            elif arg.location == "cookie":
                cookies[arg.wire] = _text(value)
            elif arg.location == "body":
                body, has_body = value, True
            else:
                if body is None:
                    body = {}
                body[arg.wire] = value
                has_body = True
        if op.body_type is not None and not has_body and op.method in ("post", "put", "patch"):
            has_body = any(a.location == "body-property" for a in op.arguments)
            body = {} if has_body else None
        if cookies:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        request = self.client.build_request(
            op.method.upper(),
            path,
            params=query or None,
            headers=headers,
            json=body if has_body else None,
        )
        _check_under(request.url, self.client.base_url)
        return request

    async def call(self, op: Operation, arguments: Mapping[str, Any]) -> httpx.Response:
        return await self.client.send(self.request(op, arguments))


def _segment(name: str, value: object) -> str:
    """A path parameter's value as one path segment: every reserved character (``/``
    included) percent-encoded; ``.`` and ``..``, which would move the request to another
    path, refused."""
    text = _text(value)
    if text in (".", ".."):
        raise OutsideBaseUrl(f"path parameter {name!r} cannot be {text!r}")
    return quote(text, safe="")


def _check_under(url: httpx.URL, base: httpx.URL) -> None:
    """Refuse a request URL that is not under ``base`` (same scheme, host and port, and
    its path below the base's); no check for a client without a base URL."""
    if not base.host:
        return
    prefix = base.raw_path if base.raw_path.endswith(b"/") else base.raw_path + b"/"
    same_origin = (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
    if not same_origin or not url.raw_path.startswith(prefix):
        raise OutsideBaseUrl(f"{url} is not under the API's base URL {base}")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _answer(response: httpx.Response) -> tuple[Any, str]:
    text = response.text
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        try:
            return decode(response.content), text
        except DecodeError:
            pass
    return None, text


def _tool_fn(caller: ApiCaller, op: Operation) -> Callable[..., Awaitable[ToolResult]]:
    async def call(**arguments: Any) -> ToolResult:
        try:
            response = await caller.call(op, arguments)
        except OutsideBaseUrl as exc:
            return ToolResult(f"{op.method.upper()} {op.path} not sent: {exc}", is_error=True)
        except httpx.HTTPError as exc:
            return ToolResult(f"{op.method.upper()} {op.path} failed: {exc}", is_error=True)
        data, text = _answer(response)
        if not response.is_success:
            shown = text if len(text) <= MAX_BODY_TEXT else text[:MAX_BODY_TEXT] + "..."
            return ToolResult(
                f"HTTP {response.status_code} from {op.method.upper()} {op.path}: {shown}",
                is_error=True,
                meta={"status": response.status_code},
            )
        if op.output is not None and data is not None:
            structured = {"result": data} if op.wrapped else data
            return ToolResult(text, structured=structured)
        return ToolResult(text if text else f"HTTP {response.status_code}")

    return call


def _reader_fn(
    caller: ApiCaller, op: Operation, names: list[str]
) -> Callable[..., Awaitable[object]]:
    """A resource (template) function whose parameters are the template's variables."""

    async def read(**values: str | None) -> object:
        by_name = {a.name: a for a in op.arguments}
        arguments = {k: v for k, v in values.items() if k in by_name and v is not None}
        try:
            response = await caller.call(op, arguments)
        except OutsideBaseUrl as exc:
            raise invalid_params(str(exc)) from None
        if not response.is_success:
            raise LookupError(f"HTTP {response.status_code}")  # answered as not found
        data, text = _answer(response)
        return data if data is not None else text

    params = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | None)
        for n in names
    ]
    read.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    read.__annotations__ = {n: str | None for n in names}
    return read


def build(
    server: Server,
    spec: Mapping[str, Any] | str | Path,
    client: httpx.AsyncClient,
    *,
    route_map: Sequence[Route] = (),
    headers: Mapping[str, str] | None = None,
) -> Server:
    doc = Document(load_spec(spec))  # (a URL was fetched by from_openapi)
    caller = ApiCaller(client, headers or {})
    for op in operations(doc, (headers or {}).keys()):
        kind = next((r.kind for r in route_map if r.matches(op)), "tool")
        if kind == "exclude":
            continue
        if kind in ("resource", "template") and op.method == "get":
            names = [a.name for a in op.arguments if a.location in ("path", "query")]
            required = [
                a for a in op.arguments if a.required and a.location not in ("path", "query")
            ]
            if not required and (kind == "template" or not op.path_names):
                path = "".join("/{" + n + "}" for n in op.path_names)
                queries = [a.name for a in op.arguments if a.location == "query"]
                query = "{?" + ",".join(queries) + "}" if queries else ""
                uri = f"openapi://{op.name}{path}{query}"
                listed_names = names if (path or query) else []
                server.resource(
                    uri, name=op.name, description=op.description, mime_type="application/json"
                )(_reader_fn(caller, op, listed_names))
                continue
        server.tool(
            _tool_fn(caller, op),
            name=op.name,
            description=op.description,
            input_schema=op.input_schema(),
            output_schema=op.output,
            annotations=_annotations(op),
            tags=op.tags,
        )
    return server


def _annotations(op: Operation) -> dict[str, Any]:
    if op.method in ("get", "head", "options"):
        return {"readOnlyHint": True}
    if op.method in ("put", "delete"):
        return {"idempotentHint": True}
    return {}


def from_openapi(
    spec: Mapping[str, Any] | str | Path,
    *,
    base_url: str | None = None,
    client: httpx.AsyncClient | None = None,
    route_map: Sequence[Route] = (),
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    timeout: float = 30.0,
    spec_policy: UrlPolicy | None = None,
    **options: Any,
) -> Server:
    """A server whose tools (resources, templates) call the API ``spec`` describes.

    ``base_url``: where the API is (default: the document's first ``servers`` URL);
    ``client``: an ``httpx.AsyncClient`` of your own (its base URL, auth, transport);
    ``headers``: sent with every request (API keys); ``spec_policy``: where a ``spec``
    given as a URL may be fetched from (default :class:`~mcpkit.auth.client.UrlPolicy`:
    public https only; ``UrlPolicy.local_development()`` for an API on this machine).
    ``options`` go to ``Server``."""
    document = load_spec(spec, spec_policy)
    if client is None:
        url = base_url or _server_url(document)
        if not url:
            raise ValueError("base_url is needed: the document names no servers")
        client = httpx.AsyncClient(base_url=url, timeout=timeout, follow_redirects=False)
    info: object = document.get("info")
    if not isinstance(info, dict):
        info = {}
    server = Server(
        name or str(info.get("title") or "openapi"),
        str(info.get("version") or "0.1.0"),
        **options,
    )
    return build(server, document, client, route_map=route_map, headers=headers)


def from_asgi(
    app: Any,
    spec: Mapping[str, Any] | None = None,
    *,
    base_url: str = "http://asgi.local",
    **kwargs: Any,
) -> Server:
    """A server for an ASGI app in this process (FastAPI: its ``app.openapi()``;
    Starlette and others: pass ``spec``), called through ``httpx.ASGITransport``."""
    if spec is None:
        generate = getattr(app, "openapi", None)
        if not callable(generate):
            raise ValueError("pass spec=: this app does not generate an OpenAPI document")
        spec = generate()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
    return from_openapi(spec, client=client, **kwargs)


def _server_url(document: Mapping[str, Any]) -> str | None:
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        url = servers[0].get("url")
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            return url
    return None
