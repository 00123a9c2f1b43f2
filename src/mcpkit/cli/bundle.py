"""MCP Bundles (``.mcpb``) generated from a :class:`~mcpkit.Server` object.

A bundle is a zip archive with ``manifest.json`` at its root (the format of the
``@anthropic-ai/mcpb`` package, manifest version 0.3) that a desktop host installs.  The
manifest is written from the server itself: its name, version and description, its tools
and prompts as ``tools/list`` and ``prompts/list`` give them, and one ``user_config``
entry per declared setting (:meth:`Server.setting`), passed to the server as the
environment variable of the same name.

The server runs with the host's ``python3`` (``python`` on Windows) and needs no ``uv``
nor ``pip``: mcpkit and every distribution it needs are copied from this environment into
``server/lib``, which the manifest puts on ``PYTHONPATH``.  Some of them are compiled
(pydantic-core, orjson, cryptography), so a bundle runs on the platform and the Python
minor version it was built with; ``compatibility`` says which.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import json
import re
import sys
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from ..server.server import Server

__all__ = [
    "Bundle",
    "BundleError",
    "diff_manifests",
    "dump_manifest",
    "manifest_for",
    "plan_bundle",
    "write_bundle",
]

MANIFEST_VERSION = "0.3"
_PLATFORMS = {"linux": "linux", "darwin": "darwin", "win32": "win32"}
#: What a prompt's argument becomes in a manifest's prompt text (mcpb's own syntax).
_PLACEHOLDER = "${{arguments.{}}}"


@dataclass(frozen=True)
class Bundle:
    """What goes into the archive: the manifest and ``{name in the zip: file on disk}``."""

    manifest: dict[str, Any]
    files: dict[str, Path]


def plan_bundle(server: Server, target: str, *, with_dists: Iterable[str] = ()) -> Bundle:
    """The bundle for ``server``, loaded from ``target`` (a file, or a module of a local
    package) as ``mcpkit serve`` takes it; ``with_dists``: more installed distributions
    the server imports (their own requirements come along)."""
    served, files = _server_files(target)
    for dist in dependency_closure(["mcpkit", *with_dists]):
        files.update(_dist_files(dist))
    manifest = manifest_for(server, served, entry_point=_entry_point(files, target))
    return Bundle(manifest, files)


def manifest_for(server: Server, served: str, *, entry_point: str) -> dict[str, Any]:
    """``manifest.json`` for ``server``; ``served``: the TARGET the bundle's command
    serves, relative to the bundle's ``server/`` folder."""
    env = {"PYTHONPATH": "${__dirname}/server/lib:${__dirname}/server"}
    env.update({name: f"${{user_config.{name}}}" for name in server.settings})
    listing = anyio.run(_listing, server)
    command: dict[str, Any] = {
        "command": "python3",
        "args": ["-m", "mcpkit", "serve", f"${{__dirname}}/server/{served}"],
        "env": env,
        "platform_overrides": {
            "win32": {
                "command": "python",
                "env": {**env, "PYTHONPATH": env["PYTHONPATH"].replace(":", ";")},
            }
        },
    }
    if "/" not in served and not served.partition(":")[0].endswith(".py"):
        command["args"][3] = served  # a module, found on PYTHONPATH
    info = server.info
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "name": server.name,
        "display_name": info.get("title") or server.name,
        "version": server.version,
        "description": _description(server),
        "author": {"name": info.get("title") or server.name},
        "server": {"type": "python", "entry_point": entry_point, "mcp_config": command},
        "tools": listing["tools"],
        "prompts": listing["prompts"],
        "compatibility": {
            "platforms": [_PLATFORMS.get(sys.platform, sys.platform)],
            "runtimes": {"python": _python_range()},
        },
    }
    if info.get("websiteUrl"):
        manifest["homepage"] = info["websiteUrl"]
    if server.settings:
        manifest["user_config"] = {
            name: _user_config(setting) for name, setting in server.settings.items()
        }
    return manifest


def write_bundle(bundle: Bundle, path: Path) -> None:
    """The ``.mcpb`` archive at ``path``: ``manifest.json`` first, then the files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", dump_manifest(bundle.manifest))
        for name, source in sorted(bundle.files.items()):
            archive.write(source, name)


def dump_manifest(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def diff_manifests(committed: str, current: dict[str, Any], label: str) -> str:
    """A unified diff from the committed manifest to the one the code gives now ("" when
    they are the same JSON; key order and spacing do not count)."""
    try:
        before = dump_manifest(json.loads(committed))
    except ValueError:
        before = committed
    after = dump_manifest(current)
    if before == after:
        return ""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"{label} (committed)",
            tofile=f"{label} (from the code)",
        )
    )


# ---------------------------------------------------------------------- the server's side


async def _listing(server: Server) -> dict[str, list[dict[str, Any]]]:
    from ..client import Client

    async with Client(server) as client:
        tools = await client.list_tools() if server.tools else []
        prompts = await client.list_prompts() if server.prompts else []
        rendered = [await _prompt_entry(client, dict(prompt)) for prompt in prompts]
    return {
        "tools": [_tool_entry(dict(tool)) for tool in sorted(tools, key=lambda t: t["name"])],
        "prompts": sorted(rendered, key=lambda p: str(p["name"])),
    }


def _tool_entry(tool: dict[str, Any]) -> dict[str, Any]:
    entry = {"name": tool["name"]}
    if tool.get("description"):
        entry["description"] = tool["description"]
    return entry


async def _prompt_entry(client: Any, prompt: dict[str, Any]) -> dict[str, Any]:
    """A manifest prompt: its text is the prompt rendered with ``${arguments.NAME}`` for
    each argument (how mcpb writes a template), else its description."""
    from ..client import ClientError

    names = [str(a["name"]) for a in prompt.get("arguments") or []]
    try:
        got = await client.get_prompt(prompt["name"], {n: _PLACEHOLDER.format(n) for n in names})
        text = "\n\n".join(_texts(got.get("messages") or []))
    except ClientError:
        text = ""
    entry: dict[str, Any] = {"name": prompt["name"]}
    if prompt.get("description"):
        entry["description"] = prompt["description"]
    if names:
        entry["arguments"] = names
    entry["text"] = text or prompt.get("description") or prompt["name"]
    return entry


def _texts(messages: list[Any]) -> Iterator[str]:
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, dict) and block.get("type") == "text":
                yield str(block.get("text", ""))


def _description(server: Server) -> str:
    described = server.info.get("description") or server.instructions or ""
    first = described.strip().splitlines()[0] if described.strip() else ""
    return first or f"The {server.name} MCP server"


def _user_config(setting: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "string",
        "title": setting.title or setting.name,
        "description": setting.description,
        "required": setting.required,
        "sensitive": setting.secret,
    }
    if setting.default is not None:
        entry["default"] = setting.default
    return entry


def _python_range() -> str:
    major, minor = sys.version_info[:2]
    return f">={major}.{minor}.0 <{major}.{minor + 1}.0"


# ---------------------------------------------------------------------- files


class BundleError(Exception):
    """The bundle cannot be made; the message says why."""


def _server_files(target: str) -> tuple[str, dict[str, Path]]:
    """(what the bundle's command serves, the user's files) for TARGET."""
    spec, sep, name = target.partition(":")
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec).resolve()
        if not path.is_file():
            raise BundleError(f"no such file: {spec}")
        return f"{path.name}{sep}{name}", {f"server/{path.name}": path}
    import importlib.util

    from .target import importable_from_cwd

    importable_from_cwd()
    top = spec.split(".")[0]
    found = importlib.util.find_spec(top)
    if found is None or not found.submodule_search_locations:
        raise BundleError(f"{top!r} is not a package in this folder; give the server file")
    root = Path(next(iter(found.submodule_search_locations))).resolve()
    files = {
        f"server/{top}/{path.relative_to(root).as_posix()}": path
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
    return target, files


def _entry_point(files: dict[str, Path], target: str) -> str:
    spec = target.partition(":")[0]
    if spec.endswith(".py") or "/" in spec:
        return f"server/{Path(spec).name}"
    module = "server/" + spec.replace(".", "/")
    return module + ".py" if f"{module}.py" in files else f"{module}/__init__.py"


def dependency_closure(names: Iterable[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``names`` and everything they require (without
    extras), each once.  A requirement that is not installed here is one its marker
    leaves out (another Python, another platform), so it is skipped."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = _normal(todo.pop())
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            if not seen:
                raise BundleError(f"{name} is not installed here") from None
            continue
        seen[name] = dist
        todo.extend(_requirement_names(dist))
    return list(seen.values())


def _requirement_names(dist: importlib.metadata.Distribution) -> Iterator[str]:
    for requirement in dist.requires or []:
        spec, _, marker = requirement.partition(";")
        if "extra" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if match:
            yield match.group(1)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_files(dist: importlib.metadata.Distribution) -> dict[str, Path]:
    """``server/lib/...`` -> installed file, for each file the distribution installed in
    site-packages (its RECORD), without bytecode and scripts.  An editable install (a
    source checkout) records no package files; its packages are copied from where they
    are imported."""
    files: dict[str, Path] = {}
    for item in dist.files or []:
        relative = PurePosixPath(str(item))
        if relative.parts[0] == ".." or "__pycache__" in relative.parts or item.suffix == ".pth":
            continue
        located = Path(str(dist.locate_file(item)))
        if located.is_file():
            files[f"server/lib/{relative}"] = located
    for package in _editable_packages(dist, files):
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                relative_path = path.relative_to(package.parent).as_posix()
                files[f"server/lib/{relative_path}"] = path
    return files


def _editable_packages(dist: importlib.metadata.Distribution, files: dict[str, Path]) -> list[Path]:
    if dist.metadata["Name"].lower() != "mcpkit":
        return []
    if any(name.startswith("server/lib/mcpkit/") for name in files):
        return []
    return [Path(__file__).resolve().parents[1]]  # the mcpkit package this module is in
