"""Content blocks a tool, prompt or resource can return, and the conversion of plain
Python return values into them.

The classes are small frozen dataclasses with a ``to_wire`` method: cheap to build,
and explicit about the JSON they produce.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import os

from ..types.codec import encode_str

__all__ = [
    "Audio",
    "Content",
    "EmbeddedResource",
    "Image",
    "ResourceLink",
    "Text",
    "to_content_blocks",
]


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode()


@dataclass(frozen=True, slots=True)
class Text:
    """A text content block: ``{"type": "text", "text": ...}`` with optional
    annotations and ``_meta``.  A tool returning a plain ``str`` gets one of these."""

    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The content block as JSON."""
        out: dict[str, Any] = {"type": "text", "text": self.text}
        return _extras(out, self.annotations, self.meta)


#: Leading bytes of common formats -> MIME type (for ``data`` given without a type).
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def _media(
    data: bytes | str | None,
    path: str | os.PathLike[str] | None,
    mime_type: str | None,
    default: str,
) -> tuple[str, str]:
    """(base64 data, MIME type) from ``data`` or the file at ``path``; the type is the
    given one, else guessed from the file name, else sniffed from the bytes."""
    if path is not None:
        from pathlib import Path

        raw: bytes | str = Path(path).read_bytes()
        if mime_type is None:
            import mimetypes

            mime_type = mimetypes.guess_type(str(path))[0]
    elif data is not None:
        raw = data
    else:
        raise ValueError("give data or path")
    if mime_type is None and isinstance(raw, bytes):
        head = raw[:12]
        mime_type = next((m for magic, m in _MAGIC if head.startswith(magic)), None)
        if mime_type is None and head[:4] == b"RIFF":
            mime_type = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(head[8:12])
    return _b64(raw), mime_type or default


@dataclass(frozen=True, slots=True)
class _Media:
    """Image and audio content: one shape, told apart by ``_KIND`` and the default type."""

    _KIND: ClassVar[str] = ""
    _DEFAULT_MIME: ClassVar[str] = ""

    data: bytes | str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    path: str | os.PathLike[str] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The content block as JSON: the bytes in base64, the MIME type given, from the file
        name, or sniffed from the bytes."""
        data, mime = _media(self.data, self.path, self.mime_type, self._DEFAULT_MIME)
        out: dict[str, Any] = {"type": self._KIND, "data": data, "mimeType": mime}
        return _extras(out, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class Image(_Media):
    """An image: ``data`` (raw bytes or already-base64 text) or ``path`` (a file read when
    the result is sent).  The MIME type is the given one, else guessed from the file name
    or the bytes, else ``image/png``."""

    _KIND: ClassVar[str] = "image"
    _DEFAULT_MIME: ClassVar[str] = "image/png"


@dataclass(frozen=True, slots=True)
class Audio(_Media):
    """Audio, like :class:`Image` (default type ``audio/wav``)."""

    _KIND: ClassVar[str] = "audio"
    _DEFAULT_MIME: ClassVar[str] = "audio/wav"


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents inline: give ``text`` or ``blob`` (bytes are base64-encoded)."""

    uri: str
    text: str | None = None
    blob: bytes | str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The content block as JSON: text, or the bytes in base64 as ``blob``."""
        resource: dict[str, Any] = {"uri": self.uri}
        if self.mime_type:
            resource["mimeType"] = self.mime_type
        if self.blob is not None:
            resource["blob"] = _b64(self.blob)
        else:
            resource["text"] = self.text or ""
        out: dict[str, Any] = {"type": "resource", "resource": resource}
        return _extras(out, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A link to a resource (``type: resource_link``): the client may read the URI later,
    unlike an embedded resource whose contents travel in the result."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = field(default=None)

    def to_wire(self) -> dict[str, Any]:
        """The content block as JSON."""
        out: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        if self.size is not None:
            out["size"] = self.size
        return _extras(out, self.annotations, self.meta)


Content = Text | Image | Audio | EmbeddedResource | ResourceLink
_CONTENT_TYPES = (Text, Image, Audio, EmbeddedResource, ResourceLink)


def _extras(
    out: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None
) -> dict[str, Any]:
    if annotations:
        out["annotations"] = annotations
    if meta:
        out["_meta"] = meta
    return out


def is_content(value: object) -> bool:
    return isinstance(value, _CONTENT_TYPES) or (
        isinstance(value, dict) and isinstance(value.get("type"), str) and _looks_like_block(value)
    )


def _looks_like_block(value: dict[str, Any]) -> bool:
    kind = value["type"]
    required = {
        "text": "text",
        "image": "data",
        "audio": "data",
        "resource": "resource",
        "resource_link": "uri",
    }.get(kind)
    return required is not None and required in value


def to_content_blocks(value: Any) -> list[dict[str, Any]]:
    """Plain return values -> content blocks.

    ``str`` -> one text block; a content object or content dict -> itself; a list/tuple of
    those -> each; ``None`` -> no blocks; anything else -> its JSON as one text block.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, _CONTENT_TYPES):
        return [value.to_wire()]
    if isinstance(value, dict) and is_content(value):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(is_content(v) for v in value):
        return [v.to_wire() if isinstance(v, _CONTENT_TYPES) else v for v in value]
    return [{"type": "text", "text": json_text(value)}]


def json_text(value: object) -> str:
    try:
        return encode_str(value)
    except TypeError:
        return str(value)


def blocks(items: Sequence[Content | dict[str, Any]]) -> list[dict[str, Any]]:
    return [i.to_wire() if isinstance(i, _CONTENT_TYPES) else i for i in items]
