"""Plan section 5, group D (stdio), H4/H5 (what a client does with a hostile server's
output) and L5 (many sequential calls across the pipe-buffer size), with real processes.

Server side: ``mcpkit serve rel_server.py`` driven line by line.  Client side: the mcpkit
``Client`` against ``servers/hostile_server.py``, a stdlib script that misbehaves on
purpose.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import pytest
from relkit import (
    HERE,
    StdioProcess,
    base_env,
    call_tool,
    hwm_kb,
    next_id,
    rel_server_argv,
    rss_kb,
    stdio_serving,
)

from mcpkit.client import (
    Client,
    ClientError,
    RequestTimeoutError,
    ServerStartupError,
)
from mcpkit.transports.client_stdio import StdioTransport
from support.servers import pid_alive
from support.waits import poll

if TYPE_CHECKING:
    from conftest import Rel

HOSTILE = HERE / "servers" / "hostile_server.py"


def client_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "MCPKIT_SEALING_KEYS": "reliability-suite-key",
        "MCPKIT_REL_RECORD": str(tmp_path / "client-record.txt"),
        **extra,
    }


# ------------------------------ D1


@pytest.mark.slow
def test_d1_64mib_line_is_dropped_with_bounded_memory(rel: Rel, stdio: StdioProcess) -> None:
    stdio_serving(rel, stdio)
    before = rss_kb(stdio.pid)
    piece = b"z" * (1 << 20)
    for _ in range(64):
        stdio.send_raw(piece)
    stdio.send_raw(b"\n")
    error = stdio.recv(30)
    assert error["error"]["code"] == -32600 and "id" not in error, error
    assert "too large" in error["error"]["message"].lower()
    growth_mib = (hwm_kb(stdio.pid) - before) / 1024
    assert growth_mib < 40, f"peak RSS grew {growth_mib:.0f} MiB for a 64 MiB line (cap 16 MiB)"
    stdio_serving(rel, stdio)


def test_d1_line_just_under_the_cap_is_processed(rel: Rel, stdio: StdioProcess) -> None:
    rid = next_id()
    payload = "q" * (4 * 1024 * 1024)
    stdio.send(call_tool(rid, "size", {"data": payload}))
    answer, _ = stdio.recv_response(rid, 30)
    assert answer["result"]["content"][0]["text"] == str(len(payload))
    rel.verified()


# ------------------------------ D2 / D3 / D8


def test_d2_d8_prints_and_child_output_never_reach_the_wire(rel: Rel, stdio: StdioProcess) -> None:
    for tool in ("junk_print", "child_echo"):
        rid = next_id()
        stdio.send(call_tool(rid, tool))
        line = stdio.recv_line()
        message = json.loads(line)  # a junk line would not parse
        assert message["id"] == rid and "result" in message, line
    assert stdio.quiet(0.3) == []
    assert "junk printed by a tool" in stdio.stderr()
    assert "junk from a child process" in stdio.stderr()
    rel.verified(2)


@pytest.mark.parametrize(
    "text",
    [
        "a\nb",
        "a\r\nb",
        "\u2028\u2029",
        "\x00\x1b[2J",
        "🙂" * 10,
        "\\n",
        '"}\n{"jsonrpc":"2.0","id":1,"result":{}}',
    ],
)
def test_d3_every_output_line_is_one_json_object(rel: Rel, stdio: StdioProcess, text: str) -> None:
    rid = next_id()
    stdio.send(call_tool(rid, "echo", {"nonce": text}))
    line = stdio.recv_line()
    assert line.endswith(b"\n") and b"\n" not in line[:-1] and b"\r" not in line
    message = json.loads(line)
    assert message["id"] == rid and message["result"]["content"][0]["text"] == text
    rel.verified()


@pytest.mark.anyio
async def test_d2_client_skips_junk_lines_from_the_server(rel: Rel, tmp_path: Path) -> None:
    async with Client([sys.executable, str(HOSTILE), "junk"], cwd=tmp_path, timeout=10) as client:
        for i in range(20):
            result = await client.call_tool("echo", {"nonce": f"n{i}"})
            assert result["content"][0]["text"] == f"n{i}"
        assert cast(StdioTransport, client.transport)._junk_lines >= 20
    rel.verified(20)


# ------------------------------ D4


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "call-in-flight"])
def test_d4_stdin_eof_exits_zero_within_2s(rel: Rel, tmp_path: Path, busy: bool) -> None:
    proc = StdioProcess(tmp_path)
    try:
        stdio_serving(rel, proc)
        if busy:
            tag = uuid.uuid4().hex[:12]
            proc.send(call_tool(next_id(), "slow", {"tag": tag, "seconds": 30}))
            assert poll(lambda: f"start {tag}" in proc.records(), 5)
        started = time.monotonic()
        proc.close_stdin()
        code = proc.proc.wait(10)
        elapsed = time.monotonic() - started
        assert code == 0, proc.stderr()
        assert elapsed < 2.0, f"exited {elapsed:.2f}s after EOF"
        if busy:
            assert f"cleanup {tag}" in proc.records()
        assert "Traceback" not in proc.stderr()
    finally:
        proc.kill()


@pytest.mark.anyio
@pytest.mark.slow
async def test_d4_server_ignoring_eof_and_sigterm_is_killed_with_its_tree(
    rel: Rel, tmp_path: Path
) -> None:
    child_file = tmp_path / "child.pid"
    client = Client(
        [sys.executable, str(HOSTILE), "stubborn"],
        cwd=tmp_path,
        timeout=10,
        env={"HOSTILE_CHILD_PID": str(child_file)},
        shutdown_grace=2.0,
    )
    await client.connect()
    server_pid = cast(StdioTransport, client.transport).pid
    assert server_pid is not None
    with anyio.fail_after(10):
        while not child_file.exists() or not child_file.read_text():
            await anyio.sleep(0.02)
    child_pid = int(child_file.read_text())
    started = time.monotonic()
    await client.aclose()
    elapsed = time.monotonic() - started
    # close stdin -> 2 s -> SIGTERM -> 2 s -> SIGKILL (whole group)
    assert 3.5 <= elapsed <= 8.0, f"shutdown took {elapsed:.2f}s"
    assert poll(lambda: not pid_alive(server_pid) and not pid_alive(child_pid), 3), (
        f"left behind: server {pid_alive(server_pid)}, tool child {pid_alive(child_pid)}"
    )


# ------------------------------ D5 is in test_rel_faults


# ------------------------------ D6


CLIENT_SCRIPT = textwrap.dedent(
    """
    import sys, anyio
    from mcpkit.client import Client

    async def main():
        async with Client(sys.argv[1:], timeout=None) as client:
            print(client.transport.pid, flush=True)
            async def progress(params):
                pass
            await client.call_tool("progress_forever", {"interval": 0.005}, on_progress=progress)

    anyio.run(main)
    """
)


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.slow
def test_d6_killed_client_leaves_no_server_behind(rel: Rel, tmp_path: Path) -> None:
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT_SCRIPT, *rel_server_argv()],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=base_env(MCPKIT_REL_RECORD=str(tmp_path / "r.txt")),
        start_new_session=True,
    )
    try:
        assert client.stdout is not None
        server_pid = int(client.stdout.readline())
        time.sleep(0.5)  # the progress flood is running
        assert pid_alive(server_pid)
        os.kill(client.pid, signal.SIGKILL)
        client.wait(5)
        gone = poll(lambda: not pid_alive(server_pid), 2.5)
        if not gone:
            before = _cpu_ticks(server_pid)
            time.sleep(1)
            busy = _cpu_ticks(server_pid) - before
            os.kill(server_pid, signal.SIGKILL)
            pytest.fail(f"server outlived its client by >2.5s (CPU ticks in 1s: {busy})")
    finally:
        if client.poll() is None:
            client.kill()


# ------------------------------ D7


@pytest.mark.anyio
async def test_d7_stderr_flood_does_not_deadlock(rel: Rel, tmp_path: Path) -> None:
    seen: list[str] = []
    async with Client(
        rel_server_argv(), cwd=tmp_path, env=client_env(tmp_path), timeout=60, stderr=seen.append
    ) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shout", {"nbytes": 16 * 1024 * 1024})
        assert result["content"][0]["text"].startswith("shouted")
        echo = await client.call_tool("echo", {"nonce": "after"})
        assert echo["content"][0]["text"] == "after"
    assert len(seen) >= 16 * 1024
    rel.verified(2)


@pytest.mark.anyio
async def test_d7_server_that_never_reads_stdin_times_out(rel: Rel, tmp_path: Path) -> None:
    async with Client(
        [sys.executable, str(HOSTILE), "deaf"], cwd=tmp_path, timeout=1.0, shutdown_grace=0.5
    ) as client:
        started = time.monotonic()
        with anyio.move_on_after(8) as guard, pytest.raises(RequestTimeoutError):
            await client.call_tool("echo", {"nonce": "x" * (1 << 20)})
        assert not guard.cancelled_caught, "no timeout after 8s (1s configured)"
        assert time.monotonic() - started < 3


# ------------------------------ D8


@pytest.mark.anyio
async def test_d8_missing_executable_fails_within_1s(rel: Rel, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ServerStartupError) as info:
        async with Client([str(tmp_path / "no-such-server")], cwd=tmp_path):
            pass
    assert time.monotonic() - started < 1.0
    assert "no-such-server" in str(info.value)


@pytest.mark.anyio
async def test_d8_server_that_exits_at_once_fails_fast_with_its_stderr(
    rel: Rel, tmp_path: Path
) -> None:
    started = time.monotonic()
    with pytest.raises(ClientError) as info:
        async with Client(
            [sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"],
            cwd=tmp_path,
        ):
            pass
    assert time.monotonic() - started < 3.0
    assert "boom" in str(info.value)


# ------------------------------ H4 / H5 client side


@pytest.mark.anyio
async def test_h4_huge_unterminated_line_from_the_server_is_bounded(
    rel: Rel, tmp_path: Path
) -> None:
    async with Client(
        [sys.executable, str(HOSTILE), "huge"], cwd=tmp_path, timeout=3.0, shutdown_grace=0.5
    ) as client:
        me = os.getpid()
        before = rss_kb(me)
        with anyio.fail_after(20), pytest.raises(ClientError):
            await client.call_tool("echo", {"nonce": "x"})
        growth_mib = (rss_kb(me) - before) / 1024
        assert growth_mib < 30, f"client RSS grew {growth_mib:.0f} MiB (cap 16 MiB)"


@pytest.mark.anyio
async def test_h5_stray_and_duplicate_responses_never_reach_a_caller(
    rel: Rel, tmp_path: Path
) -> None:
    async with Client([sys.executable, str(HOSTILE), "stray"], cwd=tmp_path, timeout=10) as client:
        misrouted = 0
        for i in range(30):
            result = await client.call_tool("echo", {"nonce": f"n{i}"})
            if result["content"][0]["text"] != f"n{i}":
                misrouted += 1
        rel.misrouted(misrouted)
        assert misrouted == 0
    rel.verified(30)


@pytest.mark.anyio
async def test_h3_deeply_nested_tool_schema_from_the_server(rel: Rel, tmp_path: Path) -> None:
    async with Client(
        [sys.executable, str(HOSTILE), "deep-schema"], cwd=tmp_path, timeout=10
    ) as client:
        try:
            tools = await client.list_tools()
        except ClientError:
            return
        assert "ok" in [t["name"] for t in tools]


@pytest.mark.anyio
async def test_e6_progress_flood_from_the_server_is_survived(rel: Rel, tmp_path: Path) -> None:
    seen = 0

    def count(_: dict[str, Any]) -> None:
        nonlocal seen
        seen += 1

    async with Client([sys.executable, str(HOSTILE), "flood"], cwd=tmp_path, timeout=10) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("echo", {"nonce": "done"}, on_progress=count)
        assert result["content"][0]["text"] == "done"
        assert seen > 0
    rel.verified()


# ------------------------------ stdin/stdout as files


def test_stdio_server_with_stdin_and_stdout_redirected_to_files(rel: Rel, tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_text(json.dumps(call_tool(1, "echo", {"nonce": "file"})) + "\n")
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        proc = subprocess.run(
            rel_server_argv(),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=base_env(),
            timeout=30,
        )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert json.loads(out.read_text())["result"]["content"][0]["text"] == "file"


# ------------------------------ L5


@pytest.mark.anyio
@pytest.mark.slow
async def test_l5_sequential_calls_across_the_pipe_buffer_size(rel: Rel, tmp_path: Path) -> None:
    sizes = [1, 100, 4095, 65535, 65536, 65537, 200_000, 1 << 20, 8 << 20]
    count = int(os.environ.get("MCPKIT_L5_CALLS", "3000"))
    async with Client(
        rel_server_argv(), cwd=tmp_path, env=client_env(tmp_path), timeout=60
    ) as client:
        started = time.monotonic()
        misrouted = 0
        for i in range(count):
            nonce = f"{i}-{uuid.uuid4().hex[:8]}"
            result = await client.call_tool("echo", {"nonce": nonce})
            misrouted += result["content"][0]["text"] != nonce
        rate = count / (time.monotonic() - started)
        for size in sizes:
            nonce = "s" * size
            result = await client.call_tool("echo", {"nonce": nonce})
            text = result["content"][0]["text"]
            misrouted += text != nonce
        rel.misrouted(misrouted)
        rel.verified(count + len(sizes))
        assert misrouted == 0
        assert rate > 200, f"{rate:.0f} small calls/s (plan target 2,000/s)"
