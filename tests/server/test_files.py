"""Content helpers from files (Image/Audio with inferred MIME types, File) and the file,
directory and text resources, on both eras; a directory resource refuses every path that
leaves its root (``..``, ``%2F``, absolute paths, symlinks) exactly as a missing file."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcpkit import Audio, Image, Server
from mcpkit.server.files import DirectoryResource, FileResource, TextResource
from support.inproc import call, call_error, legacy, modern

if TYPE_CHECKING:  # the lazy public name is typed ``object`` (mcpkit.server.__getattr__)
    from mcpkit.server.files import File
else:
    from mcpkit.server import File

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "readme.txt").write_text("hello")
    (root / "sub" / "data.json").write_text('{"a": 1}')
    (root / "logo.png").write_bytes(PNG)
    (tmp_path / "secret.txt").write_text("top secret")
    (root / "escape.txt").symlink_to(tmp_path / "secret.txt")
    (root / "inside.txt").symlink_to(root / "readme.txt")
    return root


def test_image_and_audio_infer_their_types(tmp_path: Path) -> None:
    (tmp_path / "pic.jpg").write_bytes(JPEG)
    (tmp_path / "song.mp3").write_bytes(b"ID3" + b"\x00" * 8)
    assert Image(path=tmp_path / "pic.jpg").to_wire()["mimeType"] == "image/jpeg"
    assert Image(JPEG).to_wire()["mimeType"] == "image/jpeg"  # sniffed from the bytes
    assert Image(PNG).to_wire()["mimeType"] == "image/png"
    assert Image(b"unknown").to_wire()["mimeType"] == "image/png"  # the default
    assert Image(PNG, "image/x-custom").to_wire()["mimeType"] == "image/x-custom"
    wire = Audio(path=tmp_path / "song.mp3").to_wire()
    assert wire["mimeType"] == "audio/mpeg"
    assert base64.b64decode(wire["data"]).startswith(b"ID3")
    with pytest.raises(ValueError):
        Image().to_wire()


def test_file_makes_an_embedded_resource(tree: Path) -> None:
    text = File(tree / "readme.txt").to_wire()["resource"]
    assert text == {
        "uri": (tree / "readme.txt").as_uri(),
        "mimeType": "text/plain",
        "text": "hello",
    }
    blob = File(tree / "logo.png", uri="docs://logo").to_wire()["resource"]
    assert blob["uri"] == "docs://logo" and blob["mimeType"] == "image/png"
    assert base64.b64decode(blob["blob"]) == PNG


def build(tree: Path) -> Server:
    server = Server("files")
    server.add_resource(TextResource("note://hi", "hi there"))
    server.add_resource(FileResource(tree / "readme.txt", uri="file://readme"))
    server.add_resource(DirectoryResource(tree, "docs://root"))
    return server


async def read(server: Server, uri: str, meta: Any) -> dict[str, Any]:
    contents: dict[str, Any] = (await call(server, "resources/read", {"uri": uri}, meta))[
        "contents"
    ][0]
    return contents


@pytest.mark.parametrize("era", ERAS)
async def test_resources_serve_files_text_and_listings(tree: Path, era: Any) -> None:
    server = build(tree)
    assert (await read(server, "note://hi", era()))["text"] == "hi there"
    assert (await read(server, "file://readme", era()))["text"] == "hello"
    listing = (await read(server, "docs://root", era()))["text"].splitlines()
    assert listing == ["inside.txt", "logo.png", "readme.txt", "sub/data.json"]
    data = await read(server, "docs://root/sub/data.json", era())
    assert data["text"] == '{"a": 1}' and data["mimeType"] == "application/json"
    logo = await read(server, "docs://root/logo.png", era())
    assert base64.b64decode(logo["blob"]) == PNG
    assert (await read(server, "docs://root/inside.txt", era()))["text"] == "hello"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "%2E%2E/secret.txt",
        "sub/../../secret.txt",
        "sub%2F..%2F..%2Fsecret.txt",
        "%2Fetc%2Fpasswd",
        "/etc/passwd",
        "escape.txt",  # a symlink to a file outside the root
        "sub",  # a directory, not a file
        "missing.txt",
    ],
)
async def test_directory_refuses_escapes_like_a_missing_file(
    tree: Path, era: Any, path: str
) -> None:
    server = build(tree)
    code = -32602 if era().era == "modern" else -32002
    error = await call_error(
        server, "resources/read", {"uri": f"docs://root/{path}"}, era(), code=code
    )
    assert error.message == f"Resource not found: docs://root/{path}"
    assert "secret" not in str(error.data).replace(path, "")
