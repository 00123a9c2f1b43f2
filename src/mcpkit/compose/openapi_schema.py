"""OpenAPI documents as JSON Schema: local ``$ref`` resolution and the 3.0 dialect.

Pure functions, no I/O.  An OpenAPI ``$ref`` to anything but a schema (a parameter, a
request body, a response) is replaced by its target; a schema ``$ref``
(``#/components/schemas/X``) becomes ``#/$defs/X`` in the tool schema, with ``X`` (and
what it references, transitively) copied into ``$defs`` and then inlined where that
terminates (recursive models keep their ``$defs``).  A reference outside the document is
never fetched: it becomes an empty (accept-anything) schema.

OpenAPI 3.0 schemas differ from JSON Schema 2020-12 in a few keywords, converted here:
``nullable: true`` (a ``null`` type added), boolean ``exclusiveMinimum``/``Maximum``
(numbers in 2020-12), ``example`` (``examples``) and the OpenAPI-only keywords
(``discriminator``, ``xml``, ``externalDocs``) dropped.
"""

from __future__ import annotations

import copy
from typing import Any

from ..server.schema import inline_refs

__all__ = ["Document", "tool_schema"]

_SCHEMAS = "#/components/schemas/"
_DROP = frozenset({"discriminator", "xml", "externalDocs", "example"})


class Document:
    """An OpenAPI document and the dialect its schemas are written in."""

    def __init__(self, spec: dict[str, Any]) -> None:
        version = str(spec.get("openapi", ""))
        if not version.startswith(("3.0", "3.1")):
            raise ValueError(
                f"only OpenAPI 3.0 and 3.1 documents are supported (this one says "
                f"openapi: {version or 'nothing'!r}; Swagger 2.0 needs converting first)"
            )
        self.spec = spec
        self.legacy = version.startswith("3.0")
        components = spec.get("components")
        schemas = components.get("schemas") if isinstance(components, dict) else None
        self.schemas: dict[str, Any] = schemas if isinstance(schemas, dict) else {}

    def deref(self, node: Any, depth: int = 0) -> Any:
        """``node`` with a local non-schema ``$ref`` (parameters, bodies, responses)
        replaced by its target; anything unresolvable becomes ``{}``."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 32:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                return {}
            target: Any = self.spec
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    return {}
                target = target[part]
            node, depth = target, depth + 1
        return node

    def schema(self, schema: Any) -> dict[str, Any]:
        """A self-contained JSON Schema 2020-12 for an OpenAPI schema object."""
        used: dict[str, Any] = {}
        pending: list[str] = []
        body = self._convert(schema, used, pending)
        while pending:
            name = pending.pop()
            if name in used and used[name] is not None:
                continue
            used[name] = None  # (in progress: a recursive model refers to itself)
            used[name] = self._convert(self.schemas.get(name, {}), used, pending)
        out = body if isinstance(body, dict) else {}
        if used:
            out = {**out, "$defs": {k: v for k, v in used.items() if v is not None}}
            out = inline_refs(out)
        return out

    def _convert(self, node: Any, used: dict[str, Any], pending: list[str]) -> Any:
        if isinstance(node, list):
            return [self._convert(item, used, pending) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref.startswith(_SCHEMAS):
                name = ref[len(_SCHEMAS) :].replace("~1", "/").replace("~0", "~")
                if name not in self.schemas:
                    return {}
                if name not in used:
                    pending.append(name)
                return {"$ref": "#/$defs/" + _pointer(name)}
            target = self.deref(node)
            return self._convert(target, used, pending) if target is not node else {}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP:
                continue
            if key in ("properties", "patternProperties", "$defs", "definitions"):
                if isinstance(value, dict):
                    out[key] = {k: self._convert(v, used, pending) for k, v in value.items()}
                continue
            out[key] = self._convert(value, used, pending)
        if self.legacy:
            _from_30(node, out)
        return out


def _pointer(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _from_30(node: dict[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0 keywords in their JSON Schema 2020-12 form (in ``out``)."""
    if "example" in node:
        out["examples"] = [copy.deepcopy(node["example"])]
    if out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        elif "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = out.get(bound)
        if isinstance(flag, bool):
            if flag and limit in out:
                out[bound] = out.pop(limit)
            else:
                out.pop(bound)


def tool_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An ``inputSchema`` (root ``type: object``) from per-argument schemas; ``$defs`` of
    the arguments are merged at the root, where their ``#/$defs/...`` refs point."""
    defs: dict[str, Any] = {}
    props: dict[str, Any] = {}
    for name, schema in properties.items():
        if isinstance(schema, dict) and isinstance(schema.get("$defs"), dict):
            defs.update(schema["$defs"])
            schema = {k: v for k, v in schema.items() if k != "$defs"}
        props[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if defs:
        out["$defs"] = defs
    return out
