"""Skills (SEP-2640, ``io.modelcontextprotocol/skills``) published from a folder with
``server.skills(...)`` and read with ``client.list_skills()`` / ``client.get_skill()``, in
memory on both eras: entries with verbatim frontmatter and complete digests, files read
with ``resources/read``, ``resources/directory/read``, and -32602 where the SEP says."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mcpkit import Server
from mcpkit.client import Client, ClientError, ServerError

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]
WORKFLOW = "---\nname: git-workflow\ndescription: Follow the team's Git conventions\n---\n\n# Git\n"
REFUNDS = (
    "---\nname: refunds\ndescription: Process refunds per policy\nlicense: Apache-2.0\n"
    "metadata:\n  version: '2.1'\n---\n\nSee `examples/email.md`.\n"
)


def skills_folder(base: Path) -> Path:
    folder = base / "skills"
    (folder / "git-workflow").mkdir(parents=True)
    (folder / "git-workflow" / "SKILL.md").write_text(WORKFLOW)
    refunds = folder / "acme" / "billing" / "refunds"
    (refunds / "examples").mkdir(parents=True)
    (refunds / "templates" / "regional").mkdir(parents=True)
    (refunds / "SKILL.md").write_text(REFUNDS)
    (refunds / "examples" / "email.md").write_text("Dear customer,\n")
    (refunds / "templates" / "regional" / "eu.md").write_text("EU template\n")
    return folder


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("era", ERAS)
async def test_list_and_get_skills(era: str, tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    server = Server("skills")
    uris = server.skills(folder)
    assert uris == ["skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md"]
    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        caps = client.server_info.capabilities
        listed = await client.list_skills()
        by_name = await client.get_skill("refunds")
        by_uri = await client.get_skill("skill://git-workflow/SKILL.md")
        raw = await client.request("skills/list")
    if era == "modern":
        assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in caps
    refunds = folder / "acme" / "billing" / "refunds"
    assert by_name == {
        "uri": "skill://acme/billing/refunds/SKILL.md",
        "frontmatter": {
            "name": "refunds",
            "description": "Process refunds per policy",
            "license": "Apache-2.0",
            "metadata": {"version": "2.1"},
        },
        "resources": [
            {
                "uri": f"skill://acme/billing/refunds/{name}",
                "digest": digest(refunds / name),
                "size": (refunds / name).stat().st_size,
            }
            for name in ("SKILL.md", "examples/email.md", "templates/regional/eu.md")
        ],
    }
    assert listed == [by_name, by_uri]
    assert by_uri["frontmatter"] == {
        "name": "git-workflow",
        "description": "Follow the team's Git conventions",
    }
    if era == "modern":
        assert raw["resultType"] == "complete" and "ttlMs" in raw and "cacheScope" in raw


@pytest.mark.parametrize("era", ERAS)
async def test_skill_files_are_resources(era: str, tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    server = Server("skills")
    server.skills(folder)
    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        listed = {r["uri"]: r for r in await client.list_resources()}
        skill_md = await client.read_resource("skill://acme/billing/refunds/SKILL.md")
        supporting = await client.read_resource("skill://acme/billing/refunds/examples/email.md")
        entry = await client.get_skill("refunds")
    assert set(listed) == {"skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md"}
    assert listed["skill://git-workflow/SKILL.md"]["mimeType"] == "text/markdown"
    assert skill_md["contents"][0]["text"] == REFUNDS
    assert supporting["contents"][0]["text"] == "Dear customer,\n"
    first = entry["resources"][0]
    assert first["digest"] == "sha256:" + hashlib.sha256(REFUNDS.encode()).hexdigest()


async def test_digests_follow_edits(tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    server = Server("skills")
    server.skills(folder)
    async with Client(server) as client:
        before = (await client.get_skill("git-workflow"))["resources"][0]
        (folder / "git-workflow" / "SKILL.md").write_text(WORKFLOW + "More.\n")
        after = (await client.get_skill("git-workflow"))["resources"][0]
    assert before["digest"] != after["digest"] and after["size"] == before["size"] + 6


@pytest.mark.parametrize("era", ERAS)
async def test_directory_read(era: str, tmp_path: Path) -> None:
    server = Server("skills")
    server.skills(skills_folder(tmp_path))
    async with Client(server, era=era) as client:  # type: ignore[arg-type]
        root = await client.request(
            "resources/directory/read", {"uri": "skill://acme/billing/refunds"}
        )
        nested = await client.request(
            "resources/directory/read", {"uri": "skill://acme/billing/refunds/templates"}
        )
        with pytest.raises(ServerError) as not_dir:
            await client.request(
                "resources/directory/read", {"uri": "skill://acme/billing/refunds/SKILL.md"}
            )
    assert root["resources"] == [
        {
            "uri": "skill://acme/billing/refunds/SKILL.md",
            "name": "SKILL.md",
            "mimeType": "text/markdown",
        },
        {
            "uri": "skill://acme/billing/refunds/examples",
            "name": "examples",
            "mimeType": "inode/directory",
        },
        {
            "uri": "skill://acme/billing/refunds/templates",
            "name": "templates",
            "mimeType": "inode/directory",
        },
    ]
    assert nested["resources"] == [
        {
            "uri": "skill://acme/billing/refunds/templates/regional",
            "name": "regional",
            "mimeType": "inode/directory",
        }
    ]
    assert "ttlMs" not in root
    assert not_dir.value.code == -32602


async def test_unknown_skill_is_invalid_params(tmp_path: Path) -> None:
    server = Server("skills")
    server.skills(skills_folder(tmp_path))
    async with Client(server) as client:
        with pytest.raises(ServerError) as unknown:
            await client.request("skills/get", {"uri": "skill://acme/billing/chargebacks/SKILL.md"})
        with pytest.raises(ClientError, match="no skill named 'nope'"):
            await client.get_skill("nope")
    assert unknown.value.code == -32602
    assert "No skill is served at skill://acme/billing/chargebacks/SKILL.md" in str(unknown.value)


def test_malformed_skills_are_refused(tmp_path: Path) -> None:
    wrong_name = tmp_path / "a" / "deploy"
    wrong_name.mkdir(parents=True)
    (wrong_name / "SKILL.md").write_text("---\nname: ship\ndescription: d\n---\n")
    with pytest.raises(ValueError, match="must equal its directory's, 'deploy'"):
        Server("x").skills(tmp_path / "a")
    no_front = tmp_path / "b" / "plain"
    no_front.mkdir(parents=True)
    (no_front / "SKILL.md").write_text("# no frontmatter\n")
    with pytest.raises(ValueError, match="must begin with YAML frontmatter"):
        Server("x").skills(tmp_path / "b")
    no_description = tmp_path / "c" / "terse"
    no_description.mkdir(parents=True)
    (no_description / "SKILL.md").write_text("---\nname: terse\n---\n")
    with pytest.raises(ValueError, match="'description'"):
        Server("x").skills(tmp_path / "c")
    with pytest.raises(ValueError, match="is not a directory"):
        Server("x").skills(tmp_path / "missing")


async def test_removed_files_and_links_out_of_the_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not a skill file\n")
    folder = skills_folder(tmp_path)
    refunds = folder / "acme" / "billing" / "refunds"
    (refunds / "leak.txt").symlink_to(secret)
    server = Server("skills")
    server.skills(folder)
    async with Client(server) as client:
        uris = [r["uri"] for r in (await client.get_skill("refunds"))["resources"]]
        (refunds / "examples" / "email.md").unlink()
        after = [r["uri"] for r in (await client.get_skill("refunds"))["resources"]]
        with pytest.raises(ServerError) as gone:
            await client.read_resource("skill://acme/billing/refunds/examples/email.md")
        with pytest.raises(ServerError) as leak:
            await client.read_resource("skill://acme/billing/refunds/leak.txt")
    assert "skill://acme/billing/refunds/leak.txt" not in uris
    assert "skill://acme/billing/refunds/examples/email.md" in uris
    assert "skill://acme/billing/refunds/examples/email.md" not in after
    assert gone.value.code == -32602 and leak.value.code == -32602
