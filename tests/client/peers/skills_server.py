"""A Skills server (SEP-2640): ``server.skills("skills/")``, the folder under the
directory it is started in (a test writes the skills there first)."""

from __future__ import annotations

from mcpkit import Server

server = Server("skills-peer-test", "1.0.0")
server.skills("skills/")
