"""The commands a server author types every day, run as real processes against real servers.

Targets are given the way ``mcpkit serve`` takes them (a file, ``file:name``, a module),
which the client launches as ``python -m mcpkit serve TARGET`` over stdio.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import free_port, http_subprocess, run_mcpkit

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

#: The command line as a person types it, in this folder unless a test says where.
mcpkit = functools.partial(run_mcpkit, cwd=HERE)
FIXTURE = HERE / "cli_server.py"
QUICKSTART = REPO / "examples" / "quickstart.py"


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with http_subprocess(
        tmp_path_factory.mktemp("cli-http"), QUICKSTART, "--state", "memory:"
    ) as server:
        yield server.url


# ---------------------------------------------------------------------- targets


@pytest.mark.parametrize(
    "target", [str(FIXTURE), f"{FIXTURE}:server", "cli_server.py", "cli_server:server"]
)
def test_list_takes_what_serve_takes(target: str) -> None:
    out = mcpkit("list", target)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cli-fixture 2.0.0  [protocol 2026-07-28, modern era]")
    assert "shout(text: string, times?: integer, loud?: boolean)" in out.stdout


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_call_over_stdio_and_http_both_eras(http_url: str, era: str) -> None:
    for target in (str(QUICKSTART), http_url):
        out = mcpkit("call", target, "add", "a=1", "b=2.5", "--era", era, "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["structuredContent"] == {"a": 1, "b": 2.5, "sum": 3.5}


def test_a_file_that_defines_a_server_and_exits_gets_a_hint() -> None:
    out = mcpkit("list", f"{sys.executable} {FIXTURE}")  # runs the file, which just ends
    assert out.returncode == 3
    assert "exited with code 0" in out.stderr and "mcpkit serve FILE.py" in out.stderr
    assert "Traceback" not in out.stderr


# ---------------------------------------------------------------------- call


def test_call_converts_key_value_by_schema() -> None:
    out = mcpkit("call", str(FIXTURE), "shout", "text=42", "times=2", "loud=yes")
    assert (out.returncode, out.stdout) == (0, "42 42\n"), out.stderr


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["times=two"], "times: expected an integer, got 'two'"),
        (["loud=maybe"], "loud: expected a boolean"),
        (["volume=3"], "no argument 'volume'; it takes: text, times, loud"),
        (["text"], "expected key=value, got 'text'"),
    ],
)
def test_bad_key_value_names_the_field_and_type(words: list[str], says: str) -> None:
    out = mcpkit("call", str(FIXTURE), "shout", "text=a", *words)
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_tool_exits_2_and_lists_some_known_ones() -> None:
    out = mcpkit("call", str(QUICKSTART), "nope", "a=1")
    assert out.returncode == 2
    assert "the server has no tool 'nope'; it has: add, echo, greet" in out.stderr
    # JSON arguments skip tools/list; an unknown tool is still named as such
    out = mcpkit("call", str(QUICKSTART), "nope", "--args", '{"a": 1}')
    assert out.returncode == 2 and "no tool 'nope'" in out.stderr


def test_json_arguments_need_no_tools_list(tmp_path: Path) -> None:
    """With only JSON arguments the CLI goes straight to tools/call: what the server
    received is recorded by a ``tee`` in front of its stdin."""
    seen = tmp_path / "requests.jsonl"
    server = f"tee {seen} | {sys.executable} -m mcpkit serve {QUICKSTART}"
    out = mcpkit("call", "echo", "--args", '{"text": "hi"}', "--", "sh", "-c", server)
    assert out.returncode == 0 and out.stdout == "hi\n", out.stderr
    assert '"tools/call"' in seen.read_text() and '"tools/list"' not in seen.read_text()
    out = mcpkit("call", "echo", "text=hi", "--", "sh", "-c", server)
    assert out.returncode == 0 and '"tools/list"' in seen.read_text()


def test_json_output_keeps_unicode_as_utf8() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "call",
            str(QUICKSTART),
            "echo",
            "text=Grüße 世界",
            "--json",
        ],
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert out.returncode == 0, out.stderr
    assert "Grüße 世界".encode() in out.stdout and b"\\u" not in out.stdout


def test_tool_error_exits_1(tmp_path: Path) -> None:
    server = tmp_path / "failing.py"
    server.write_text(
        "from mcpkit import Server, ToolError\nserver = Server('f')\n"
        "@server.tool\ndef boom() -> str:\n    raise ToolError('it broke')\n"
    )
    out = mcpkit("call", str(server), "boom")
    assert out.returncode == 1 and "it broke" in out.stderr


# ---------------------------------------------------------------------- input requests


def test_form_elicitation_asks_field_by_field_with_types_enums_and_defaults() -> None:
    # size: "huge" is refused then "2" picks the 2nd choice; count: default; gift: yes;
    # colour: by title; note: skipped (optional)
    answers = "huge\n2\n\nyes\nBlue\n\n"
    out = mcpkit("call", str(FIXTURE), "order", "--json", stdin=answers)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["structuredContent"]
    assert result == {
        "action": "accept",
        "content": {"size": "large", "count": 1, "gift": True, "colour": "b"},
    }
    assert "The server asks: Your order?" in out.stderr
    assert "1) small" in out.stderr and "2) Blue [b]" in out.stderr
    assert "count (integer, optional, default 1)" in out.stderr
    assert "expected one of small, large (or its number), got 'huge'" in out.stderr


def test_form_elicitation_on_the_legacy_era_too() -> None:
    out = mcpkit(
        "call",
        str(FIXTURE),
        "order",
        "--json",
        "--era",
        "legacy",
        stdin="small\n3\nno\nr\nfragile\n",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"]["content"] == {
        "size": "small",
        "count": 3,
        "gift": False,
        "colour": "r",
        "note": "fragile",
    }


def test_no_input_declines_and_end_of_input_declines() -> None:
    out = mcpkit("call", str(FIXTURE), "order", "--json", "--no-input")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"]["action"] == "decline"
    out = mcpkit("call", str(FIXTURE), "order", "--json", stdin="small\n")
    assert json.loads(out.stdout)["structuredContent"]["action"] == "decline"
    assert "end of input" in out.stderr


def test_url_elicitation_prints_the_url() -> None:
    out = mcpkit("call", str(FIXTURE), "connect", stdin="")
    assert out.returncode == 0, out.stderr
    assert "https://example.test/authorize?x=1" in out.stderr
    assert out.stdout == "url answer: accept\n"
    out = mcpkit("call", str(FIXTURE), "connect", "--no-input")
    assert out.stdout == "url answer: decline\n"


def test_progress_and_logs_go_to_stderr_at_the_chosen_level() -> None:
    out = mcpkit("call", str(FIXTURE), "work", "steps=2", "--log-level", "info")
    assert out.returncode == 0 and out.stdout == "worked 2 steps\n", out.stderr
    assert "progress: 1/2 (50%) step 1" in out.stderr
    assert "progress: 2/2 (100%) step 2" in out.stderr
    assert "[info] fixture: starting work" in out.stderr
    assert '[warning] {"done": 2}' in out.stderr
    assert "debug detail" not in out.stderr
    quiet = mcpkit("call", str(FIXTURE), "work", "steps=2")
    assert "starting work" not in quiet.stderr


# ---------------------------------------------------------------------- read, prompt, inspect


def test_read_prints_contents_and_json() -> None:
    out = mcpkit("read", str(FIXTURE), "note://ünïcode")
    assert out.returncode == 0 and out.stdout == "Grüße, 世界\n", out.stderr
    out = mcpkit("read", str(FIXTURE), "note://ünïcode", "--json")
    assert json.loads(out.stdout)["contents"][0]["text"] == "Grüße, 世界"
    out = mcpkit("read", str(FIXTURE), "note://missing")
    assert out.returncode == 1 and "Resource not found: note://missing" in out.stderr


def test_prompt_with_arguments() -> None:
    out = mcpkit("prompt", str(FIXTURE), "review", "code=x = 1", "language=c")
    assert out.returncode == 0, out.stderr
    assert "[user]\nReview this c:\nx = 1" in out.stdout
    out = mcpkit("prompt", str(FIXTURE), "review", "code=1", "--json")
    assert json.loads(out.stdout)["messages"][0]["content"]["text"] == "Review this python:\n1"
    out = mcpkit("prompt", str(FIXTURE), "review", "lang=c")
    assert out.returncode == 2 and "has no argument 'lang'; it takes: code, language" in out.stderr
    out = mcpkit("prompt", str(FIXTURE), "review")
    assert out.returncode == 2 and "needs code=..." in out.stderr
    out = mcpkit("prompt", str(FIXTURE), "nope")
    assert out.returncode == 2 and "no prompt 'nope'; it has: review" in out.stderr


def test_inspect_json_is_stable_and_complete(http_url: str) -> None:
    first = mcpkit("inspect", str(QUICKSTART), "--json")
    second = mcpkit("inspect", http_url, "--json")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == mcpkit("inspect", str(QUICKSTART), "--json").stdout
    report = json.loads(first.stdout)
    assert [t["name"] for t in report["tools"]] == ["add", "echo", "greet"]
    add = report["tools"][0]
    assert add["inputSchema"]["required"] == ["a", "b"] and "outputSchema" in add
    assert report["server"]["capabilities"]["tools"] is not None
    assert report["resources"][0]["uri"] == "note://today"
    assert json.loads(second.stdout)["tools"] == report["tools"]
    text = mcpkit("inspect", str(QUICKSTART))
    assert "Tool add" in text.stdout and "outputSchema:" in text.stdout


# ---------------------------------------------------------------------- shell manners


def test_unreachable_http_server_is_one_line_exit_3() -> None:
    out = mcpkit("list", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "5")
    assert out.returncode == 3, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "list", str(FIXTURE)],
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"cli-fixture")
    proc.stdout.close()  # like `| head -1`: the 1500-tool listing is far larger than a pipe
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141
    assert err == "", err


def test_version_and_help_with_examples() -> None:
    out = mcpkit("--version")
    assert out.returncode == 0 and out.stdout.startswith("mcpkit ")
    for command in (
        "serve",
        "dev",
        "list",
        "call",
        "read",
        "prompt",
        "inspect",
        "install",
        "gateway",
        "host",
    ):
        text = mcpkit(command, "--help").stdout
        assert "usage:" in text
        assert "examples:" in text, command
    top = mcpkit("--help").stdout
    assert "exit status: 0 ok, 1" in top and "3 the server could not be reached" in top


def test_progress_on_a_terminal_is_a_bar() -> None:
    """stderr on a pseudo-terminal: progress renders as a rich bar, not plain lines."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "call", str(FIXTURE), "work", "steps=40"],
        cwd=HERE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == b"worked 40 steps\n"
    assert "━".encode() in seen and b"step " in seen, seen[-500:]
    assert b"progress: " not in seen
