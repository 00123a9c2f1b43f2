"""``mcpkit list`` / ``mcpkit call`` as a user runs them: real processes, real servers."""

from __future__ import annotations

import functools
import json
import shlex

import pytest
from clientkit import FIXTURE_SERVER, REPO, ServerProcess

from support.servers import free_port, run_mcpkit, serve_argv

#: The command line as a person types it, from the repository root.
mcpkit = functools.partial(run_mcpkit, cwd=REPO)


SERVER_ARGV = serve_argv(FIXTURE_SERVER)


def test_list_stdio_command_line_as_one_argument() -> None:
    out = mcpkit("list", shlex.join(SERVER_ARGV))
    assert out.returncode == 0, out.stderr
    assert "mcpkit-conformance-server 1.0.0  [protocol 2026-07-28, modern era]" in out.stdout
    assert "  test_simple_text()" in out.stdout
    assert "test_prompt_with_arguments(arg1, arg2)" in out.stdout
    assert "test://static-text [text/plain]" in out.stdout
    assert "test://template/{id}/data" in out.stdout


def test_list_json_after_double_dash_in_the_legacy_era() -> None:
    out = mcpkit("list", "--json", "--era", "legacy", "--", *SERVER_ARGV)
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert listing["server"]["era"] == "legacy"
    assert listing["server"]["protocolVersion"] == "2025-11-25"
    assert "test_simple_text" in {tool["name"] for tool in listing["tools"]}
    assert listing["resourceTemplates"][0]["uriTemplate"] == "test://template/{id}/data"


def test_list_http_with_options_after_the_target(http_server: ServerProcess) -> None:
    out = mcpkit("list", http_server.url, "--json", "--era", "modern")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["server"]["era"] == "modern"


def test_call_http_converts_arguments_and_mirrors_headers(http_server: ServerProcess) -> None:
    out = mcpkit("call", http_server.url, "test_x_mcp_header", "region=eu west 1")
    assert (out.returncode, out.stdout) == (0, "region=eu west 1\n"), out.stderr


def test_call_stdio_json() -> None:
    out = mcpkit("call", "test_prompt_never_mind", "--json", "--", *SERVER_ARGV)
    assert out.returncode == 2 and "has no tool 'test_prompt_never_mind'" in out.stderr
    out = mcpkit("call", "test_simple_text", "--json", "--", *SERVER_ARGV)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["content"][0]["text"].startswith("This is a simple text")


def test_call_tool_error_exits_1(http_server: ServerProcess) -> None:
    out = mcpkit("call", http_server.url, "test_error_handling")
    assert out.returncode == 1
    assert "intentionally returns an error" in out.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("list",), "give TARGET"),
        (("call", "http://127.0.0.1:9/mcp"), "give the TOOL to call"),
        (("list", "a", "--"), "nothing after --"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], words: str) -> None:
    out = mcpkit(*args)
    assert out.returncode == 2 and words in out.stderr


def test_unreachable_server_exits_3_with_the_reason_on_one_line() -> None:
    out = mcpkit("list", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "5")
    assert out.returncode == 3 and "cannot connect to http://127.0.0.1:" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    out = mcpkit("list", "--", "/nonexistent/server")
    assert out.returncode == 3 and "cannot start server" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
