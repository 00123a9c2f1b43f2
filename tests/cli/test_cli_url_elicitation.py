"""``mcpkit call`` on a tool that needs the user to visit a page first (``-32042``,
2025-11-25): the URL is printed, the command waits for the server's completion
notification and calls again; with ``--no-input`` it declines and says so."""

from __future__ import annotations

from pathlib import Path

from support.servers import run_mcpkit

FIXTURE = Path(__file__).resolve().parent / "url_server.py"


def test_call_prints_the_url_waits_and_retries(tmp_path: Path) -> None:
    out = run_mcpkit("call", str(FIXTURE), "account", "--era", "legacy", cwd=tmp_path, stdin="")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "connected: ada\n"
    assert "https://example.test/connect?e=el_" in out.stderr


def test_no_input_declines_with_the_url_shown(tmp_path: Path) -> None:
    out = run_mcpkit("call", str(FIXTURE), "account", "--era", "legacy", "--no-input", cwd=tmp_path)
    assert out.returncode != 0
    assert "https://example.test/connect?e=el_" in out.stderr
    assert "-32042" in out.stderr and "decline" in out.stderr


def test_a_modern_url_round_waits_for_the_person_before_the_retry() -> None:
    """2026-07-28 has no completion notice: the retry is how the server tells, so the
    command retries once the person says they are done (Enter), not at once."""
    import io

    import anyio

    from mcpkit.cli.terminal import TerminalUI

    prompts: list[str] = []

    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        return "\n"

    err = io.StringIO()
    ui = TerminalUI(interactive=True, err=err, read_line=read_line)
    modern = {"mode": "url", "message": "Connect", "url": "https://example.test/c"}
    assert anyio.run(ui.show_url, modern) == {"action": "accept"}
    assert prompts == ["  Press Enter once you have finished there: "]
    legacy = {**modern, "elicitationId": "el_1"}
    assert anyio.run(ui.show_url, legacy) == {"action": "accept"}
    assert len(prompts) == 1 and "waiting for the server to confirm" in err.getvalue()
