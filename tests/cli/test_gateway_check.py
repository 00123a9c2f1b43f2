"""``mcpkit gateway --check CONFIG`` as a person types it: "ok" and exit 0 for a good file,
every mistake and exit 1 for a bad one, exit 2 for a wrong command line."""

from __future__ import annotations

from pathlib import Path

from support.servers import run_mcpkit

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = '[[upstream]]\nname = "a"\nurl = "http://127.0.0.1:9/mcp"\n'


def test_the_shipped_example_checks_ok() -> None:
    done = run_mcpkit("gateway", "--check", "examples/gateway.toml", cwd=ROOT)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_check_reports_every_unknown_key_and_table_and_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    text = 'default_effect = "deny"\n' + UPSTREAM + 'prefx = "a_"\n'
    text += '[gatway]\nname = "x"\n[[rule]]\neffect = "allow"\nprincipal = ["alice"]\n'
    config.write_text(text)
    done = run_mcpkit("gateway", "--check", str(config), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ok" not in done.stdout
    for named in ("upstream[0].prefx", "[gatway]", "rule[0].principal"):
        assert named in done.stderr, done.stderr
    for meant in ("prefix", "gateway", "principals"):
        assert f"did you mean {meant!r}" in done.stderr, done.stderr


def test_check_without_a_file_is_a_usage_error(tmp_path: Path) -> None:
    done = run_mcpkit("gateway", "--check", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
