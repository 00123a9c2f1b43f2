"""FastMCP's Skills client (SEP-2640: ``Client(extensions=[SkillsClientExtension()])``,
``list_skills``, ``get_skill``, ``read_skill``) reading an MCP server over Streamable HTTP.

Run with the peers venv's Python (FastMCP is not a dependency of mcpkit):
``python fastmcp_skills_client.py URL``; prints one JSON object of what it read."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from fastmcp import Client
from fastmcp.skills.client import SkillsClientExtension


async def main(url: str) -> None:
    async with Client(url, extensions=[SkillsClientExtension()]) as client:
        listed = await client.list_skills()
        report: dict[str, Any] = {"protocol": client.protocol_version, "skills": {}}
        for entry in listed:
            skill = await client.get_skill(entry.uri)
            files = await client.read_skill(entry.uri)
            report["skills"][entry.uri] = {
                "name": skill.frontmatter.root.get("name"),
                "frontmatter": skill.frontmatter.root,
                "files": {path: data.decode() for path, data in files.files.items()},
            }
    print(json.dumps(report))


asyncio.run(main(sys.argv[1]))
