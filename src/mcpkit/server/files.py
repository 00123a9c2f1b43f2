"""Content and resources backed by files: ``File``, and resource classes for a file, a
directory and static text, registered with ``server.add_resource(...)``.

A directory resource serves every file under its root through a ``{+path}`` template, so
the path comes from the client: it is decoded once (``%2F`` is a slash, ``%2E%2E`` two
dots), resolved with every symlink followed, and refused unless the result is still
inside the root.  A refusal answers exactly as a missing file does (resource not found),
so a client cannot probe what lies outside.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from .content import EmbeddedResource

if TYPE_CHECKING:
    from .server import Server

__all__ = ["DirectoryResource", "File", "FileResource", "TextResource", "guess_mime"]

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/toml")


class ResourceObject(Protocol):
    """What ``server.add_resource`` takes: an object that registers itself (the classes
    here, or an application's own)."""

    def register(self, server: Server) -> None: ...


def guess_mime(path: str | os.PathLike[str], default: str = "application/octet-stream") -> str:
    kind, _ = mimetypes.guess_type(str(path))
    return kind or default


def is_text_mime(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml"))


def _read(path: Path, mime: str) -> str | bytes:
    return path.read_text(encoding="utf-8") if is_text_mime(mime) else path.read_bytes()


def File(  # a function named like the content classes it builds
    path: str | os.PathLike[str], *, mime_type: str | None = None, uri: str | None = None
) -> EmbeddedResource:
    """A file's contents as an embedded resource (text for text types, else a blob), its
    MIME type guessed from the name unless given."""
    resolved = Path(path).resolve()
    mime = mime_type or guess_mime(resolved)
    data = _read(resolved, mime)
    target = uri or resolved.as_uri()
    if isinstance(data, str):
        return EmbeddedResource(target, text=data, mime_type=mime)
    return EmbeddedResource(target, blob=data, mime_type=mime)


@dataclass(frozen=True)
class TextResource:
    """Static text at ``uri``."""

    uri: str
    text: str
    name: str | None = None
    description: str | None = None
    mime_type: str = "text/plain"

    def register(self, server: Server) -> None:
        text = self.text
        server.resource(
            self.uri,
            name=self.name or self.uri,
            description=self.description,
            mime_type=self.mime_type,
        )(lambda: text)


@dataclass(frozen=True)
class FileResource:
    """One file, read on each request (``uri`` defaults to its ``file://`` URI)."""

    path: str | os.PathLike[str]
    uri: str | None = None
    name: str | None = None
    description: str | None = None
    mime_type: str | None = None

    def register(self, server: Server) -> None:
        path = Path(self.path).resolve()
        mime = self.mime_type or guess_mime(path)

        def read() -> str | bytes:
            return _read(path, mime)

        server.resource(
            self.uri or path.as_uri(),
            name=self.name or path.name,
            description=self.description,
            mime_type=mime,
        )(read)


@dataclass(frozen=True)
class DirectoryResource:
    """Every file under ``root``: ``{uri}`` lists them (one relative path per line) and
    ``{uri}/{path}`` reads one.  Paths that leave the root (``..``, ``%2F``-encoded
    separators, absolute paths, symlinks pointing outside) are refused."""

    root: str | os.PathLike[str]
    uri: str
    name: str | None = None
    description: str | None = None
    recursive: bool = True

    def resolve(self, relative: str) -> Path:
        """The file ``relative`` names, inside the root; ``KeyError`` (not found) for any
        path that escapes it or is not a regular file."""
        root = Path(self.root).resolve()
        text = unquote(relative)
        if "\x00" in text or text.startswith(("/", "\\")) or Path(text).is_absolute():
            raise KeyError(relative)
        candidate = (root / text).resolve()
        if not candidate.is_relative_to(root) or not candidate.is_file():
            raise KeyError(relative)
        return candidate

    def listing(self) -> str:
        root = Path(self.root).resolve()
        found = root.rglob("*") if self.recursive else root.glob("*")
        names = []
        for item in found:
            resolved = item.resolve()
            if resolved.is_file() and resolved.is_relative_to(root):
                names.append(item.relative_to(root).as_posix())
        return "\n".join(sorted(names))

    def register(self, server: Server) -> None:
        base = self.uri.rstrip("/")
        server.resource(
            base,
            name=self.name or base,
            description=self.description or f"The files under {base}/, one per line",
            mime_type="text/plain",
        )(self.listing)

        def read(path: str) -> Any:
            found = self.resolve(path)
            mime = guess_mime(found)
            data = _read(found, mime)
            if isinstance(data, str):
                return {"mimeType": mime, "text": data}
            return {"mimeType": mime, "blob": base64.b64encode(data).decode()}

        server.resource(
            base + "/{+path}",
            name=(self.name or base) + " file",
            description=f"One file under {base}/",
        )(read)
