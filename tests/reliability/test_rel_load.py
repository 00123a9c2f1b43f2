"""Load and soak scenarios of plan section 6, bounded in time, loopback only.

* L1  1,000 concurrent HTTP clients, every request with JSON-RPC id 1, 0 misroutes; and
      several stdio clients at once;
* L3  10,000 legacy sessions opened and abandoned: never above the cap, reaped;
* L2  a soak (``MCPKIT_SOAK_SECONDS``, default 60) of mixed traffic with cancellations,
      mid-stream disconnects and malformed requests: flat RSS, fds back to baseline,
      every cancelled handler cleaned up, 0 lost, 0 misrouted;
* L7  200 slow-header/slow-body connections cannot starve normal requests and are closed
      at the header (10 s) and body (30 s, 408) deadlines; an idle listen stream gets
      keep-alives (E4);
* L8  concurrent 4 MiB bodies and 64 MiB declared bodies: bounded memory;
* L13 a client that never reads its listen stream; L14 a CPU-bound synchronous tool.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from relkit import (
    LEGACY,
    ServerProcess,
    call_tool,
    fd_count,
    http_request,
    http_serving,
    hwm_kb,
    next_id,
    pipelined,
    read_response,
    rel_server_argv,
    rss_kb,
)

from mcpkit.client import Client
from support.mcp import modern_headers, modern_request
from support.waits import poll

if TYPE_CHECKING:
    from conftest import Rel

SOAK_SECONDS = float(os.environ.get("MCPKIT_SOAK_SECONDS", "60"))
LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": LEGACY,
}


@pytest.fixture(scope="module")
def server(workdir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess.cli(workdir)
    try:
        yield proc
    finally:
        proc.stop()


# ------------------------------ L1


@pytest.mark.anyio
@pytest.mark.slow
async def test_l1_1000_concurrent_clients_all_with_id_1(rel: Rel, server: ServerProcess) -> None:
    """1,000 connections, each POSTing tools/call with id 1 and its own nonce while all
    are in flight (the tool sleeps 0.5 s): each must get its own nonce back."""
    count = 1000
    nonces = [uuid.uuid4().hex for _ in range(count)]
    outcome: dict[int, Any] = {}
    connected = 0
    everyone = anyio.Event()

    async def one(i: int) -> None:
        nonlocal connected
        message = call_tool(1, "nap_echo", {"nonce": nonces[i], "seconds": 0.5})
        data = http_request("/mcp", modern_headers(message), json.dumps(message).encode())
        try:
            async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
                connected += 1
                if connected == count:
                    everyone.set()
                await everyone.wait()  # all connected before anyone sends
                await stream.send(data)
                response = await read_response(stream, bytearray())
                outcome[i] = (response.status, response.json())
        except Exception as exc:
            outcome[i] = (0, repr(exc))
            everyone.set()

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(one, i)
    lost = [i for i in range(count) if outcome[i][0] != 200]
    misrouted = [
        i
        for i in range(count)
        if i not in lost
        and (
            outcome[i][1].get("id") != 1
            or outcome[i][1]["result"]["content"][0]["text"] != nonces[i]
        )
    ]
    rel.lost(len(lost))
    rel.misrouted(len(misrouted))
    rel.verified(count - len(lost))
    assert not lost, [outcome[i] for i in lost[:3]]
    assert not misrouted
    http_serving(rel, server)


@pytest.mark.anyio
@pytest.mark.slow
async def test_l1_many_stdio_clients_with_overlapping_ids(rel: Rel, tmp_path: Path) -> None:
    clients, calls = 8, 50
    argv = rel_server_argv()
    misrouted = lost = 0

    async def one_client(k: int) -> None:
        nonlocal misrouted, lost
        async with Client(
            argv, cwd=tmp_path, env={"MCPKIT_SEALING_KEYS": "k"}, timeout=60
        ) as client:

            async def call(i: int) -> None:
                nonlocal misrouted, lost
                nonce = f"{k}-{i}-{uuid.uuid4().hex[:6]}"
                try:
                    result = await client.call_tool("nap_echo", {"nonce": nonce, "seconds": 0.05})
                except Exception:
                    lost += 1
                    return
                misrouted += result["content"][0]["text"] != nonce

            async with anyio.create_task_group() as tg:
                for i in range(calls):
                    tg.start_soon(call, i)

    async with anyio.create_task_group() as tg:
        for k in range(clients):
            tg.start_soon(one_client, k)
    rel.lost(lost)
    rel.misrouted(misrouted)
    rel.verified(clients * calls - lost)
    assert (lost, misrouted) == (0, 0)


# ------------------------------ L3


@pytest.mark.anyio
@pytest.mark.slow
async def test_l3_10000_abandoned_legacy_sessions_stay_capped_and_are_reaped(
    rel: Rel, tmp_path: Path
) -> None:
    """10,000 initialize requests, never followed up, against a cap of 200 sessions that
    idle out after 0.5 s: the count never exceeds the cap, refusals are 503 + Retry-After,
    and once idle every abandoned session is reaped (lazily: at the latest by the first
    new session 5 s after the previous reap)."""
    cap, idle, total, rounds = 200, 0.5, 10_000, 20
    proc = ServerProcess.launcher(tmp_path, "--max-sessions", str(cap), "--idle", str(idle))
    try:
        start_rss = rss_kb(proc.pid)
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "l3", "version": "1"},
                },
            }
        ).encode()
        request = http_request("/mcp", LEGACY_HEADERS, init)
        statuses: Counter[int] = Counter()
        ids: set[str] = set()
        no_retry_after = 0
        counts: list[int] = []

        async def count_sessions() -> int:
            message = call_tool(next_id(), "session_count")
            data = http_request("/mcp", modern_headers(message), json.dumps(message).encode())
            (response,) = await pipelined(proc.port, [data])
            return int(response.json()["result"]["content"][0]["text"])

        async def connection(n: int) -> None:
            nonlocal no_retry_after
            for response in await pipelined(proc.port, [request] * n, depth=25):
                statuses[response.status] += 1
                if response.status == 200:
                    ids.add(response.headers["mcp-session-id"])
                elif response.status == 503:
                    no_retry_after += "retry-after" not in response.headers

        per_round = total // rounds
        with anyio.fail_after(120):
            for _ in range(rounds):
                async with anyio.create_task_group() as tg:
                    for _ in range(4):
                        tg.start_soon(connection, per_round // 4)
                counts.append(await count_sessions())
            await anyio.sleep(5.2)  # past the idle time and the 5 s reap interval
            (again,) = await pipelined(proc.port, [request])
            after_reap = await count_sessions()
        end_rss = rss_kb(proc.pid)
        rel.verified(sum(statuses.values()))
        assert sum(statuses.values()) == total
        assert set(statuses) <= {200, 503}, statuses
        assert statuses[200] >= cap and statuses[200] == len(ids), statuses
        assert no_retry_after == 0
        assert max(counts) <= cap, counts
        assert again.status == 200
        assert after_reap == 1, f"{after_reap} sessions left after the idle time"
        assert (end_rss - start_rss) / 1024 < 40, f"RSS grew {(end_rss - start_rss) / 1024:.0f} MiB"
        http_serving(rel, proc)
    finally:
        proc.stop()


# ------------------------------ L2 soak


class Soak:
    def __init__(self, proc: ServerProcess, seed: int) -> None:
        self.proc = proc
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self.misrouted = 0
        self.lost = 0
        self.unexpected: list[str] = []
        self.tags: list[str] = []

    async def op(self, client: httpx.AsyncClient) -> None:
        roll = self.rng.random()
        url = self.proc.url
        if roll < 0.80:
            nonce = uuid.uuid4().hex
            message = call_tool(next_id(), "echo", {"nonce": nonce})
            response = await client.post(url, json=message, headers=modern_headers(message))
            if response.status_code != 200:
                self.lost += 1
                self.unexpected.append(f"echo {response.status_code}")
                return
            body = response.json()
            if body.get("id") != message["id"] or body["result"]["content"][0]["text"] != nonce:
                self.misrouted += 1
            self.counts["echo"] += 1
        elif roll < 0.85:  # the client gives up mid-call (plain JSON response pending)
            tag = "c" + uuid.uuid4().hex[:10]
            self.tags.append(tag)
            message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 5, "progress": False})
            with anyio.move_on_after(self.rng.uniform(0.01, 0.1)):
                await client.post(url, json=message, headers=modern_headers(message))
            self.counts["cancel"] += 1
        elif roll < 0.90:  # disconnect in the middle of an SSE stream
            tag = "d" + uuid.uuid4().hex[:10]
            self.tags.append(tag)
            message = call_tool(next_id(), "slow", {"tag": tag, "seconds": 5}, progressToken=tag)
            with anyio.move_on_after(2):
                async with client.stream(
                    "POST", url, json=message, headers=modern_headers(message)
                ) as s:
                    async for chunk in s.aiter_bytes():
                        if b"progress" in chunk:
                            break
            self.counts["sse-disconnect"] += 1
        elif roll < 0.91:
            response = await client.post(
                url, content=b'{"jsonrpc":"2.0","id":', headers=modern_headers(None)
            )
            if response.status_code != 400 or response.json()["error"]["code"] != -32700:
                self.unexpected.append(f"malformed {response.status_code}")
            self.counts["malformed"] += 1
        elif roll < 0.95:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "s", "version": "1"},
                },
            }
            response = await client.post(url, json=init, headers=LEGACY_HEADERS)
            session = response.headers.get("mcp-session-id")
            if response.status_code != 200 or session is None:
                self.unexpected.append(f"initialize {response.status_code}")
                return
            headers = {**LEGACY_HEADERS, "mcp-session-id": session}
            nonce = uuid.uuid4().hex
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"nonce": nonce}},
            }
            response = await client.post(url, json=call, headers=headers)
            if nonce not in response.text:
                self.misrouted += 1
            await client.delete(url, headers=headers)
            self.counts["legacy"] += 1
        else:
            message = modern_request(
                next_id(), "resources/read", {"uri": f"item://{self.rng.randint(0, 99)}"}
            )
            response = await client.post(url, json=message, headers=modern_headers(message))
            if response.status_code != 200:
                self.unexpected.append(f"read {response.status_code}")
            self.counts["read"] += 1


@pytest.mark.anyio
@pytest.mark.slow
async def test_l2_soak_flat_rss_and_clean_resources(rel: Rel, tmp_path: Path) -> None:
    proc = ServerProcess.cli(tmp_path)
    try:
        soak = Soak(proc, seed=20261129)
        baseline_fds = fd_count(proc.pid)
        samples: list[tuple[float, int]] = []
        started = time.monotonic()
        end = started + SOAK_SECONDS

        async def sampler() -> None:
            while time.monotonic() < end:
                samples.append((time.monotonic() - started, rss_kb(proc.pid)))
                await anyio.sleep(1)

        async def worker() -> None:
            async with httpx.AsyncClient(timeout=15) as client:
                while time.monotonic() < end:
                    await soak.op(client)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sampler)
            for _ in range(6):
                tg.start_soon(worker)

        # every handler that started and was then cancelled or disconnected has cleaned up
        # (a client that gives up within 10-100 ms may do so before its request reached a
        # handler on a loaded machine: such a call has nothing to clean up)
        def started_tags() -> list[str]:
            records = set(proc.records())
            return [t for t in soak.tags if f"start {t}" in records]

        assert poll(
            lambda: all(f"cleanup {t}" in set(proc.records()) for t in started_tags()), 10
        ), [t for t in started_tags() if f"cleanup {t}" not in set(proc.records())][:5]
        fds_settled = poll(lambda: fd_count(proc.pid) <= baseline_fds + 4, 15)
        total = sum(soak.counts.values())
        rel.lost(soak.lost)
        rel.misrouted(soak.misrouted)
        rel.verified(total)
        warm = [rss for t, rss in samples if 0.25 * SOAK_SECONDS <= t <= 0.40 * SOAK_SECONDS]
        last = [rss for t, rss in samples if t >= 0.85 * SOAK_SECONDS]
        growth_kb = statistics.median(last) - statistics.median(warm)
        summary = (
            f"soak {SOAK_SECONDS:.0f}s: {total} ops {dict(soak.counts)}; RSS after warm-up "
            f"{statistics.median(warm) / 1024:.1f} MiB, "
            f"at the end {statistics.median(last) / 1024:.1f} MiB"
        )
        print(summary)
        assert (soak.lost, soak.misrouted) == (0, 0), summary
        assert not soak.unexpected, soak.unexpected[:10]
        assert growth_kb < max(10 * 1024, 0.15 * statistics.median(warm)), summary
        assert fds_settled, f"fds {fd_count(proc.pid)} vs baseline {baseline_fds}"
        assert "Traceback" not in proc.log_text(), proc.log_text()[-3000:]
        http_serving(rel, proc)
    finally:
        proc.stop()


# ------------------------------ L7 slowloris


@pytest.mark.anyio
@pytest.mark.slow
async def test_l7_slow_header_and_slow_body_clients_cannot_exhaust_the_server(
    rel: Rel, tmp_path: Path
) -> None:
    proc = ServerProcess.cli(tmp_path)  # defaults: header deadline 10 s, body deadline 30 s
    try:
        header_closed: list[float] = []
        body_answers: list[tuple[float, bytes]] = []
        legit: list[float] = []
        legit_failures: list[str] = []
        keepalive_at: list[float] = []
        t0 = time.monotonic()
        body = json.dumps(call_tool(1, "echo", {"nonce": "slow"})).encode()
        heads = "".join(f"{k}: {v}\r\n" for k, v in modern_headers(call_tool(1, "echo")).items())

        async def slow_header() -> None:
            stream = await anyio.connect_tcp("127.0.0.1", proc.port)
            opened = time.monotonic()
            data = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
            try:
                await stream.send(data)
                async with anyio.create_task_group() as tg:

                    async def trickle() -> None:
                        while True:
                            await anyio.sleep(2)
                            await stream.send(b"a")

                    tg.start_soon(trickle)
                    try:
                        while await stream.receive():
                            pass
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        pass
                    tg.cancel_scope.cancel()
            except (anyio.BrokenResourceError, OSError):
                pass
            header_closed.append(time.monotonic() - opened)
            await stream.aclose()

        async def slow_body() -> None:
            stream = await anyio.connect_tcp("127.0.0.1", proc.port)
            opened = time.monotonic()
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{heads}"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            await stream.send(head + body[:1])
            received = b""
            async with anyio.create_task_group() as tg:

                async def trickle() -> None:
                    for i in range(1, len(body) - 1):
                        await anyio.sleep(2)
                        await stream.send(body[i : i + 1])

                tg.start_soon(trickle)
                try:
                    while True:
                        received += await stream.receive()
                        if b"\r\n\r\n" in received and received.endswith(b"}"):
                            break
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    pass
                tg.cancel_scope.cancel()
            body_answers.append((time.monotonic() - opened, received))
            await stream.aclose()

        async def listen() -> None:
            message = modern_request(
                "idle-listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
            )
            async with (
                httpx.AsyncClient(timeout=60) as client,
                client.stream(
                    "POST", proc.url, json=message, headers=modern_headers(message)
                ) as stream,
            ):
                opened = time.monotonic()
                async for line in stream.aiter_lines():
                    if line.startswith(":"):
                        keepalive_at.append(time.monotonic() - opened)
                        return

        async def legitimate() -> None:
            async with httpx.AsyncClient(
                timeout=10, limits=httpx.Limits(max_keepalive_connections=0)
            ) as c:
                while time.monotonic() - t0 < 34:
                    nonce = uuid.uuid4().hex
                    message = call_tool(next_id(), "echo", {"nonce": nonce})
                    began = time.monotonic()
                    response: httpx.Response | httpx.HTTPError
                    try:
                        response = await c.post(
                            proc.url, json=message, headers=modern_headers(message)
                        )
                        ok = response.status_code == 200 and nonce in response.text
                    except httpx.HTTPError as exc:
                        ok, response = False, exc
                    took = time.monotonic() - began
                    legit.append(took)
                    if not ok or took > 2.0:
                        legit_failures.append(f"{took:.2f}s {response!r}")
                    await anyio.sleep(0.5)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(100):
                    tg.start_soon(slow_header)
                    tg.start_soon(slow_body)
                tg.start_soon(listen)
                tg.start_soon(legitimate)
        rel.verified(len(legit))
        rel.lost(len(legit_failures))
        assert not legit_failures, legit_failures[:5]
        assert len(header_closed) == 100 and all(8.5 <= t <= 14 for t in header_closed), (
            min(header_closed),
            max(header_closed),
        )
        assert len(body_answers) == 100
        for took, raw in body_answers:
            assert raw.startswith(b"HTTP/1.1 408"), raw[:200]
            assert json.loads(raw.partition(b"\r\n\r\n")[2])["error"]["code"] == -32600
            assert 28 <= took <= 36, took
        assert keepalive_at and 14 <= keepalive_at[0] <= 20, keepalive_at
        http_serving(rel, proc)
    finally:
        proc.stop()


# ------------------------------ L8


@pytest.mark.anyio
@pytest.mark.slow
async def test_l8_concurrent_large_bodies_bounded_memory(rel: Rel, server: ServerProcess) -> None:
    baseline = rss_kb(server.pid)
    payload = "L" * 3_900_000
    results: list[str] = []
    rejected: list[bytes] = []

    async def big_ok(client: httpx.AsyncClient) -> None:
        message = call_tool(next_id(), "size", {"data": payload})
        response = await client.post(server.url, json=message, headers=modern_headers(message))
        results.append(response.json()["result"]["content"][0]["text"])

    async def huge_declared() -> None:
        stream = await anyio.connect_tcp("127.0.0.1", server.port)
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 67108864\r\n\r\n"
        )
        received = b""
        try:
            await stream.send(head + b"x" * (1 << 20))
            with anyio.fail_after(10):
                while b"\r\n\r\n" not in received:
                    received += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            pass
        rejected.append(received)
        await stream.aclose()

    limits = httpx.Limits(max_connections=40)
    async with (
        httpx.AsyncClient(timeout=60, limits=limits) as client,
        anyio.create_task_group() as tg,
    ):
        for _ in range(20):
            tg.start_soon(big_ok, client)
            tg.start_soon(huge_declared)
    peak_growth_mib = (hwm_kb(server.pid) - baseline) / 1024
    rel.verified(len(results) + len(rejected))
    assert results == ["3900000"] * 20
    assert all(r.startswith(b"HTTP/1.1 413") for r in rejected), [r[:40] for r in rejected]
    assert peak_growth_mib < 600, f"peak RSS grew {peak_growth_mib:.0f} MiB"
    http_serving(rel, server)


# ------------------------------ L13 / L14


@pytest.mark.anyio
async def test_l13_client_that_never_reads_its_listen_stream(
    rel: Rel, server: ServerProcess
) -> None:
    before = rss_kb(server.pid)
    message = modern_request(
        "never-read", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    body = json.dumps(message).encode()
    heads = "".join(f"{k}: {v}\r\n" for k, v in modern_headers(message).items())
    stream = await anyio.connect_tcp("127.0.0.1", server.port)
    try:
        await stream.send(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{heads}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(4):
                flood = call_tool(next_id(), "touch_many", {"n": 50_000})
                response = await client.post(server.url, json=flood, headers=modern_headers(flood))
                assert response.status_code == 200
            began = time.monotonic()
            echo = call_tool(next_id(), "echo", {"nonce": "others-fine"})
            response = await client.post(server.url, json=echo, headers=modern_headers(echo))
            assert "others-fine" in response.text and time.monotonic() - began < 1.0
        growth_mib = (rss_kb(server.pid) - before) / 1024
        assert growth_mib < 50, f"RSS grew {growth_mib:.0f} MiB behind a reader that never reads"
    finally:
        await stream.aclose()
    rel.verified(5)
    http_serving(rel, server)


@pytest.mark.anyio
async def test_l14_cpu_bound_sync_tool_does_not_stall_other_requests(
    rel: Rel, server: ServerProcess
) -> None:
    worst = 0.0
    async with httpx.AsyncClient(timeout=30) as client:

        async def spin() -> None:
            message = call_tool(next_id(), "spin", {"seconds": 2.0})
            await client.post(server.url, json=message, headers=modern_headers(message))

        async with anyio.create_task_group() as tg:
            tg.start_soon(spin)
            await anyio.sleep(0.2)
            for _ in range(10):
                began = time.monotonic()
                discover = modern_request(next_id(), "server/discover")
                response = await client.post(
                    server.url, json=discover, headers=modern_headers(discover)
                )
                assert response.status_code == 200
                worst = max(worst, time.monotonic() - began)
                await anyio.sleep(0.1)
    assert worst < 0.5, f"server/discover took {worst:.2f}s while a sync tool was running"
