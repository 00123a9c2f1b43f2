"""Skills (the ``io.modelcontextprotocol/skills`` extension, SEP-2640) from a folder.

``server.skills("skills/")`` publishes every directory of the folder holding a
``SKILL.md`` (YAML frontmatter with at least ``name`` and ``description``; the directory's
name must equal ``name``) as a skill:

* each file of a skill is a resource ``skill://<skill-path>/<file-path>`` read with the
  ordinary ``resources/read`` (``SKILL.md`` is listed in ``resources/list`` with the
  frontmatter's name and description, ``text/markdown``; supporting files are not listed);
* ``skills/list`` (paginated, cacheable) and ``skills/get`` (``{"uri": ...}`` of a
  ``SKILL.md``; -32602 for a skill not served) answer ``Skill`` entries: the frontmatter
  as written, and every file of the skill with its ``sha256:`` digest and size;
* ``resources/directory/read`` lists a directory's direct children (files with their
  resource metadata, subdirectories as ``inode/directory``); -32602 for anything else.

The folder's layout (which files exist) is read once, at registration; every answer reads
the files themselves, so digests and contents follow edits (a file removed since is left
out of its skill's entry and read as an unknown resource).  A symbolic link that leads
out of the folder is not published.  A skill that breaks the
format (no frontmatter, a missing field, a name unlike its directory) is refused then.
The frontmatter is YAML: ``pip install 'mcpkit[skills]'`` (PyYAML).
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..types.errors import invalid_params
from ..types.extras import require
from .context import Context
from .handlers import _page

if TYPE_CHECKING:
    from .server import Server

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SKILL_FILE = "SKILL.md"
DIRECTORY_MIME = "inode/directory"
_SCHEME = "skill://"


@dataclass(frozen=True, slots=True)
class PublishedSkill:
    """One skill: where it lives, its ``SKILL.md`` URI and its files (relative paths)."""

    root: Path
    path: str
    files: tuple[str, ...]

    @property
    def uri(self) -> str:
        return f"{_SCHEME}{self.path}/{SKILL_FILE}"

    def entry(self) -> dict[str, Any]:
        """The ``Skill`` entry: the frontmatter as written, every file with digest and size
        (the files as they are now)."""
        resources = []
        for name in self.files:
            try:
                data = (self.root / name).read_bytes()
            except FileNotFoundError:  # removed since registration: no longer a file of it
                continue
            resources.append(
                {
                    "uri": f"{_SCHEME}{self.path}/{name}",
                    "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                }
            )
        frontmatter = read_frontmatter((self.root / SKILL_FILE).read_text("utf-8"))
        return {"uri": self.uri, "frontmatter": frontmatter, "resources": resources}


def read_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter of a ``SKILL.md`` as a JSON object; ValueError if it has none,
    or lacks a string ``name`` or ``description``."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("SKILL.md must begin with YAML frontmatter between '---' lines")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("SKILL.md frontmatter has no closing '---' line") from None
    yaml = require("yaml", "skills", "reading SKILL.md frontmatter")
    data = yaml.safe_load("\n".join(lines[1:end]))
    if not isinstance(data, dict):
        raise ValueError("SKILL.md frontmatter must be a YAML mapping")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"SKILL.md frontmatter needs a non-empty string {key!r}")
    return data


def find_skills(folder: Path) -> list[PublishedSkill]:
    """Every skill under ``folder`` (nested ones too), in path order; ValueError naming
    the ``SKILL.md`` of one whose frontmatter is wrong or whose name is not its directory's."""
    found = []
    for skill_md in sorted(folder.rglob(SKILL_FILE)):
        root = skill_md.parent
        if root == folder:
            raise ValueError(f"{skill_md}: a skill is a directory inside {folder}, not the folder")
        path = root.relative_to(folder).as_posix()
        try:
            name = read_frontmatter(skill_md.read_text("utf-8"))["name"]
        except ValueError as exc:
            raise ValueError(f"{skill_md}: {exc}") from None
        if name != root.name:
            raise ValueError(f"{skill_md}: name {name!r} must equal its directory's, {root.name!r}")
        files = tuple(
            sorted(
                p.relative_to(root).as_posix()
                for p in root.rglob("*")
                if p.is_file() and p.resolve().is_relative_to(folder)
            )
        )
        found.append(PublishedSkill(root, path, files))
    return found


class SkillDirectories:
    """The directories of the published skills, for ``resources/directory/read``."""

    def __init__(self, skills: list[PublishedSkill]) -> None:
        #: directory URI -> its children (URI -> resource metadata)
        self.children: dict[str, dict[str, dict[str, Any]]] = {}
        for skill in skills:
            for name in skill.files:
                self._add_file(f"{skill.path}/{name}")

    def _add_file(self, path: str) -> None:
        parts = PurePosixPath(path).parts
        for depth in range(1, len(parts)):
            parent = _SCHEME + "/".join(parts[:depth])
            child = _SCHEME + "/".join(parts[: depth + 1])
            leaf = depth == len(parts) - 1
            meta: dict[str, Any] = {"uri": child, "name": parts[depth]}
            meta["mimeType"] = mime_type(parts[depth]) if leaf else DIRECTORY_MIME
            self.children.setdefault(parent, {}).setdefault(child, meta)

    def read(self, uri: str) -> list[dict[str, Any]]:
        """The direct children of directory ``uri``; -32602 when it is not one."""
        children = self.children.get(uri)
        if children is None:
            raise invalid_params(f"{uri} is not a directory resource", {"uri": uri})
        return list(children.values())


def mime_type(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def publish(server: Server, folder: str | os.PathLike[str]) -> list[PublishedSkill]:
    """Register the skills of ``folder`` on ``server`` (see the module docstring)."""
    base = Path(folder).resolve()
    if not base.is_dir():
        raise ValueError(f"server.skills(): {folder} is not a directory")
    skills = find_skills(base)
    by_uri = {skill.uri: skill for skill in skills}
    directories = SkillDirectories(skills)
    for skill in skills:
        _register_files(server, skill)
    server.extension(SKILLS_EXTENSION, {"directoryRead": True})

    @server.method("skills/list", extension=SKILLS_EXTENSION)
    def skills_list(ctx: Context, cursor: str | None = None) -> dict[str, Any]:
        return _page(server, ctx, "skills", [skill.entry() for skill in skills])

    @server.method("skills/get", extension=SKILLS_EXTENSION)
    def skills_get(ctx: Context, uri: str) -> dict[str, Any]:
        skill = by_uri.get(uri)
        if skill is None:
            raise invalid_params(f"No skill is served at {uri}", {"uri": uri})
        result: dict[str, Any] = {"skill": skill.entry()}
        if ctx.meta.era == "modern":
            result.update(ttlMs=server.cache_ttl_ms, cacheScope=server.cache_scope)
        return result

    @server.method("resources/directory/read", extension=SKILLS_EXTENSION)
    def directory_read(ctx: Context, uri: str, cursor: str | None = None) -> dict[str, Any]:
        result = _page(server, ctx, "resources", directories.read(uri))
        result.pop("ttlMs", None)  # a directory listing is a PaginatedResult, not cacheable
        result.pop("cacheScope", None)
        return result

    return skills


def _register_files(server: Server, skill: PublishedSkill) -> None:
    """Each file of ``skill`` as a resource; ``SKILL.md`` listed with its name and
    description, the others readable but unlisted."""
    for name in skill.files:
        path = skill.root / name
        uri = f"{_SCHEME}{skill.path}/{name}"
        mime = mime_type(name)
        if name == SKILL_FILE:
            front = read_frontmatter(path.read_text("utf-8"))
            options: dict[str, Any] = {"name": front["name"], "description": front["description"]}
        else:
            options = {"name": name, "listed": False}
        server.resource(uri, mime_type=mime, **options)(_reader(path, mime))


def _reader(path: Path, mime: str) -> Any:
    def read() -> str | bytes:
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:  # answered as an unknown resource
            raise LookupError(str(path)) from exc
        if mime.startswith("text/") or mime in ("application/json", "application/x-yaml"):
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return data
        return data

    return read
