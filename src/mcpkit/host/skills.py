"""Skills on demand: what servers publish (the ``io.modelcontextprotocol/skills``
extension) offered to the model by name and description, a skill's body read only when
the model chooses it.

When a ready server declares the extension, the loop offers one host tool,
:data:`LOAD_SKILL` (``load_skill``), whose description lists every skill as
``server/name: description`` and whose ``skill`` argument is one of those keys.  Calling
it runs ``skills/get`` for that skill and reads its ``SKILL.md`` (``resources/read``):
the model gets the body as the tool's result.  Nothing of a skill but its name and
description reaches the model before that.  The tool's name has no ``__``, so it can
never clash with a namespaced server tool.  A skill's text is the server's words, framed
as such, like a server's ``instructions``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .host import Host

__all__ = ["LOAD_SKILL", "SKILLS_EXTENSION", "HostSkill", "list_skills", "load_skill", "skill_tool"]

log = logging.getLogger("mcpkit.host")

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
LOAD_SKILL = "load_skill"
#: A skill's description as the model sees it in the tool's listing, at most.
_DESCRIPTION_CHARS = 300


@dataclass(frozen=True, slots=True)
class HostSkill:
    """One published skill: the server that publishes it, its name, description and the
    URI of its ``SKILL.md``."""

    server: str
    name: str
    description: str
    uri: str

    @property
    def key(self) -> str:
        """How the model names it: ``server/name``."""
        return f"{self.server}/{self.name}"


async def list_skills(host: Host) -> list[HostSkill]:
    """Every skill of every ready server that declares the skills extension (a server
    whose listing fails is left out, logged)."""
    found: list[HostSkill] = []
    for name, conn in host.servers.items():
        info = conn.info
        if conn.state != "ready" or info is None:
            continue
        if SKILLS_EXTENSION not in (info.capabilities.get("extensions") or {}):
            continue
        try:
            entries = await conn.use(lambda c: c.list_skills())
        except Exception as exc:
            log.warning("server %s: skills/list failed: %s", name, exc)
            continue
        found.extend(s for s in (_skill(name, entry) for entry in entries) if s is not None)
    return found


def _skill(server: str, entry: Any) -> HostSkill | None:
    front = entry.get("frontmatter") if isinstance(entry, dict) else None
    if not isinstance(front, dict) or not isinstance(entry.get("uri"), str):
        return None
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name:
        return None
    return HostSkill(server, name, str(description or ""), entry["uri"])


def skill_tool(skills: Sequence[HostSkill]) -> dict[str, Any]:
    """The ``load_skill`` tool definition listing ``skills`` (each key and description)."""
    lines = "\n".join(f"- {s.key}: {s.description[:_DESCRIPTION_CHARS]}" for s in skills)
    return {
        "name": LOAD_SKILL,
        "description": (
            "Load a skill: instructions a connected server publishes for a kind of task. "
            "Load one when the task matches its description, then follow it. "
            f"Available skills:\n{lines}"
        ),
        "input_schema": {
            "type": "object",
            "properties": {"skill": {"type": "string", "enum": [s.key for s in skills]}},
            "required": ["skill"],
        },
    }


async def load_skill(host: Host, skills: Sequence[HostSkill], key: str) -> str:
    """The body of skill ``key`` (``server/name``), fetched now (``skills/get``, then its
    ``SKILL.md``), framed as the server's words; ``ValueError`` for an unknown key."""
    skill = next((s for s in skills if s.key == key), None)
    if skill is None:
        known = ", ".join(s.key for s in skills) or "none"
        raise ValueError(f"no skill {key!r} (available: {known})")
    conn = host.connection(skill.server)
    entry = await conn.use(lambda c: c.get_skill(skill.uri))
    read = await host.read_resource(skill.server, str(entry.get("uri") or skill.uri))
    body = "\n".join(
        str(c.get("text")) for c in read.get("contents", []) if isinstance(c.get("text"), str)
    )
    return f"[skill {skill.key}, written by server {skill.server!r}:]\n{body}"
