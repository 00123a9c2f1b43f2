"""Reading an OpenAPI description into operations (:mod:`.openapi` makes them tools).

:func:`load_spec` takes the document as a dict, JSON or YAML text or file, or an
``http(s)`` URL fetched once through the SSRF guard (:func:`fetch_description`;
:func:`operator_spec_policy` for a URL an operator typed).  :func:`operations` reads every
operation: its name (``operationId`` else ``method_path``, made safe and unique), its
arguments (path, query, header and cookie parameters, the JSON body's properties or one
``body``) and its output schema (the first 2xx JSON response, wrapped as
``{"result": ...}`` when it is not an object).  A path key that is not a plain path under
the base URL is refused (:func:`check_path_key`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..auth.client.ssrf import UrlPolicy, guarded_client, next_hop
from ..types.codec import decode
from .openapi_schema import Document, tool_schema

__all__ = [
    "Argument",
    "Operation",
    "check_path_key",
    "fetch_description",
    "load_spec",
    "operations",
    "operator_spec_policy",
]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_IDENT = re.compile(r"[^A-Za-z0-9_]+")

#: The largest description fetched from a URL (big public APIs publish several MB).
MAX_DESCRIPTION_BYTES = 32 * 1024 * 1024


@dataclass
class Argument:
    name: str  # the tool argument's name
    location: str  # path | query | header | cookie | body | body-property
    wire: str  # the name on the wire
    schema: dict[str, Any]
    required: bool
    description: str | None = None


@dataclass
class Operation:
    method: str
    path: str
    name: str
    tags: list[str]
    description: str | None
    arguments: list[Argument] = field(default_factory=list)
    output: dict[str, Any] | None = None
    wrapped: bool = False
    body_type: str | None = None

    @property
    def path_names(self) -> list[str]:
        return [a.name for a in self.arguments if a.location == "path"]

    def input_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for arg in self.arguments:
            schema = dict(arg.schema)
            if arg.description and "description" not in schema:
                schema["description"] = arg.description
            props[arg.name] = schema
        return tool_schema(props, [a.name for a in self.arguments if a.required])


def load_spec(
    spec: Mapping[str, Any] | str | Path, policy: UrlPolicy | None = None
) -> dict[str, Any]:
    """A document given as a dict, JSON text, a JSON or YAML file, or an ``http(s)`` URL
    (fetched once, now, through the SSRF guard with ``policy``: default public https)."""
    if isinstance(spec, Mapping):
        return dict(spec)
    text = str(spec)
    yaml_ok = False
    if not isinstance(spec, Path) and text.startswith(("http://", "https://")):
        text, yaml_ok = fetch_description(text, policy or UrlPolicy()), True
    elif isinstance(spec, Path) or not text.lstrip().startswith("{"):
        path = Path(text)
        text = path.read_text(encoding="utf-8")
        yaml_ok = path.suffix in (".yaml", ".yml")
    if yaml_ok and not text.lstrip().startswith("{"):
        from ..types.extras import require

        yaml = require("yaml", "openapi", "reading a YAML OpenAPI document")
        loaded: Any = yaml.safe_load(text)
    else:
        loaded = decode(text)
    if not isinstance(loaded, dict):
        raise ValueError("the OpenAPI document is not a JSON (or YAML) object")
    return loaded


def fetch_description(url: str, policy: UrlPolicy) -> str:
    """The text at ``url``, through the SSRF-guarded client: every hop's address is
    checked against ``policy`` (redirects are followed by hand, GET only, each checked
    again).  Descriptions are large: the body may reach :data:`MAX_DESCRIPTION_BYTES`
    and the fetch 30 s, whatever smaller limits the policy sets for discovery."""
    policy = dataclasses.replace(
        policy,
        max_response_bytes=max(policy.max_response_bytes, MAX_DESCRIPTION_BYTES),
        timeout_s=max(policy.timeout_s, 30.0),
    )
    with guarded_client(policy) as client:
        target = httpx.URL(url)
        for _ in range(policy.max_redirects + 1):
            response = client.get(target)
            hop = next_hop(response, policy)
            if hop is None:
                response.raise_for_status()
                return response.text
            target = hop
    raise httpx.TooManyRedirects(f"{url}: more than {policy.max_redirects} redirects")


def operator_spec_policy(url: str) -> UrlPolicy:
    """The fetch policy for a description URL an operator typed (``mcpkit serve
    --openapi``, a gateway's ``spec``): the kind of address they named is allowed (a
    loopback or private address given as such), nothing else that is not public, and
    link-local (cloud metadata) never; every redirect is checked against it."""
    host = httpx.URL(url).host.strip("[]").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        loopback = host == "localhost" or host.endswith(".localhost")
        return UrlPolicy(allow_loopback=loopback)
    return UrlPolicy(
        allow_loopback=address.is_loopback,
        allow_private=address.is_private and not address.is_loopback,
    )


def check_path_key(path: object) -> str:
    """An OpenAPI path key, refused (ValueError naming it) unless it is a plain path:
    one leading ``/``, no scheme or host, no ``.``/``..`` segments, no query or
    fragment, so that every request goes under ``base_url``."""
    text = str(path)
    bad = (
        not text.startswith("/")
        or text.startswith("//")
        or any(c in text for c in "\\?#")
        or any(segment in (".", "..") for segment in text.split("/"))
    )
    if bad:
        raise ValueError(
            f"OpenAPI path {text!r} is not a path under the base URL (a path key starts "
            "with one '/', and has no scheme, host, '.' or '..' segments, query or fragment)"
        )
    return text


def operations(doc: Document, headers: Iterable[str] = ()) -> list[Operation]:
    """Every operation of the document, named, with its arguments and output schema.
    A path key that is not a plain path is refused (:func:`check_path_key`)."""
    configured = {h.lower() for h in headers}
    taken: set[str] = set()
    out: list[Operation] = []
    paths = doc.spec.get("paths")
    for path, item in (paths if isinstance(paths, dict) else {}).items():
        check_path_key(path)
        item = doc.deref(item)
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            raw = item.get(method)
            if not isinstance(raw, dict):
                continue
            fallback = f"{method}_{_UNSAFE.sub('_', str(path)).strip('_')}"
            name = _unique(_safe(raw.get("operationId") or fallback), taken)
            text = "\n\n".join(
                t for t in (raw.get("summary"), raw.get("description")) if isinstance(t, str)
            )
            op = Operation(
                method,
                str(path),
                name,
                [str(t) for t in raw.get("tags") or []],
                text or f"{method.upper()} {path}",
            )
            _arguments(doc, op, [*shared, *(raw.get("parameters") or [])], configured)
            _body(doc, op, raw.get("requestBody"))
            _output(doc, op, raw.get("responses"))
            out.append(op)
    return out


def _safe(name: str) -> str:
    cleaned = _UNSAFE.sub("_", str(name)).strip("_") or "operation"
    return cleaned[:64]


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = name[: 64 - len(suffix)] + suffix
    taken.add(candidate)
    return candidate


def _arguments(doc: Document, op: Operation, params: list[Any], configured: set[str]) -> None:
    seen: dict[tuple[str, str], Any] = {}
    for param in params:  # an operation's own parameter overrides the path item's
        param = doc.deref(param)
        if isinstance(param, dict) and param.get("in") in LOCATIONS and param.get("name"):
            seen[(str(param["in"]), str(param["name"]))] = param
    used: set[str] = set()
    # The first of a name (path before query before header before cookie) keeps it.
    ordered = sorted(seen.items(), key=lambda kv: LOCATIONS.index(kv[0][0]))
    for (location, wire), param in ordered:
        if location == "header" and wire.lower() in configured:
            continue  # set by the server's configuration, not by the model
        name = _IDENT.sub("_", wire) or "arg"
        if name in used:
            name = f"{name}__{location}"
        used.add(name)
        schema = param.get("schema")
        if schema is None and isinstance(param.get("content"), dict):
            first: Any = next(iter(param["content"].values()), {})
            schema = first.get("schema") if isinstance(first, dict) else None
        op.arguments.append(
            Argument(
                name,
                location,
                wire,
                doc.schema(schema if schema is not None else {"type": "string"}),
                location == "path" or bool(param.get("required")),
                param.get("description") if isinstance(param.get("description"), str) else None,
            )
        )


def _json_media(content: Any) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(content, dict):
        return None
    for kind, media in content.items():
        base = str(kind).split(";")[0].strip().lower()
        if (base == "application/json" or base.endswith("+json")) and isinstance(media, dict):
            return base, media
    return None


def _body(doc: Document, op: Operation, body: object) -> None:
    body = doc.deref(body)
    if not isinstance(body, dict):
        return
    found = _json_media(body.get("content"))
    if found is None:
        return
    op.body_type, media = found
    schema = doc.schema(media.get("schema") or {})
    required = bool(body.get("required"))
    props = schema.get("properties") if schema.get("type") == "object" else None
    taken = {a.name for a in op.arguments}
    if (
        isinstance(props, dict)
        and props
        and not (set(props) & taken)
        and all(_IDENT.sub("_", k) == k for k in props)
    ):
        needed = set(schema.get("required") or [])
        defs = schema.get("$defs")
        for key, prop in props.items():
            sub = dict(prop) if isinstance(prop, dict) else {}
            if defs:
                sub["$defs"] = defs
            op.arguments.append(
                Argument(key, "body-property", key, sub, required and key in needed)
            )
        return
    name = "body" if "body" not in taken else "body__body"
    op.arguments.append(Argument(name, "body", name, schema, required, body.get("description")))


def _output(doc: Document, op: Operation, responses: object) -> None:
    if not isinstance(responses, dict):
        return
    for status, response in sorted(responses.items(), key=lambda kv: str(kv[0])):
        if not (str(status).startswith("2") and len(str(status)) == 3):
            continue
        response = doc.deref(response)
        found = _json_media(response.get("content") if isinstance(response, dict) else None)
        if found is None or not isinstance(found[1].get("schema"), dict):
            return
        schema = doc.schema(found[1]["schema"])
        if schema.get("type") == "object":
            op.output = schema
        else:
            defs = schema.pop("$defs", None)
            op.output = {
                "type": "object",
                "description": "The API's answer, under 'result' (it is not an object)",
                "properties": {"result": schema},
                "required": ["result"],
            }
            if defs:
                op.output["$defs"] = defs
            op.wrapped = True
        return
