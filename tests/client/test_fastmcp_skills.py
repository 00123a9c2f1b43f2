"""FastMCP's Skills client (SEP-2640) reading a mcpkit Skills server over Streamable HTTP:
``server.skills("skills/")`` served by ``mcpkit serve --http``, read with FastMCP's
``list_skills``, ``get_skill`` and ``read_skill`` (which checks every file against the
size and digest of the skill's manifest).

FastMCP is a peer, not a dependency: it lives in the peers venv that
``/work/shared/peers/install.sh`` (or ``python -m bench --install-peers``) makes.  The test
runs when that venv exists (``MCPKIT_PEERS_VENV``, default the benchmarks' one) and is
skipped, saying where it looked, otherwise."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clientkit import PEERS

from support.servers import ProcessServer, http_subprocess

SKILLS_SERVER = PEERS / "skills_server.py"
FASTMCP_CLIENT = PEERS / "fastmcp_skills_client.py"
WORKFLOW = "---\nname: git-workflow\ndescription: Follow the team's Git conventions\n---\n\n# Git\n"
REFUNDS = "---\nname: refunds\ndescription: Process refunds per policy\n---\n\nSee `email.md`.\n"


def peers_python() -> Path:
    venv = Path(
        os.environ.get("MCPKIT_PEERS_VENV", Path.home() / ".cache" / "mcpkit-bench" / "peers")
    )
    python = venv / "bin" / "python"
    if not python.is_file():
        pytest.skip(
            f"no peers venv at {venv} (FastMCP): run /work/shared/peers/install.sh {venv}, "
            "or set MCPKIT_PEERS_VENV"
        )
    return python


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessServer]:
    base = tmp_path_factory.mktemp("skills-fastmcp")
    (base / "skills" / "git-workflow").mkdir(parents=True)
    (base / "skills" / "git-workflow" / "SKILL.md").write_text(WORKFLOW)
    (base / "skills" / "billing" / "refunds").mkdir(parents=True)
    (base / "skills" / "billing" / "refunds" / "SKILL.md").write_text(REFUNDS)
    (base / "skills" / "billing" / "refunds" / "email.md").write_text("Dear customer,\n")
    with http_subprocess(base, SKILLS_SERVER) as running:
        yield running


def test_fastmcp_skills_client_reads_mcpkit_skills(served: ProcessServer) -> None:
    done = subprocess.run(
        [str(peers_python()), str(FASTMCP_CLIENT), served.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["protocol"] == "2026-07-28"
    skills = got["skills"]
    assert sorted(skills) == ["skill://billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md"]
    refunds = skills["skill://billing/refunds/SKILL.md"]
    assert refunds["name"] == "refunds"
    assert refunds["frontmatter"]["description"] == "Process refunds per policy"
    assert refunds["files"] == {"SKILL.md": REFUNDS, "email.md": "Dear customer,\n"}
    assert skills["skill://git-workflow/SKILL.md"]["files"] == {"SKILL.md": WORKFLOW}
