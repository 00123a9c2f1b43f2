"""Failover across replicas: ``url = [r1, r2]`` for one upstream.

Real processes: two ``mcpkit serve`` replicas of the echo server (``ECHO_NAME`` tells them
apart) behind a ``mcpkit gateway``.  Calls go round robin; one replica is killed while
idempotent calls are in flight on it and while a stream of calls runs: none fails.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gwkit
import httpx
import pytest

from mcpkit.gateway.config import ConfigError, parse_config
from support.waits import eventually


@pytest.fixture(scope="module")
def replicas(log_dir: Path, stack: list[gwkit.Proc]) -> list[gwkit.Proc]:
    procs = gwkit.start_upstreams(log_dir, ("r1",), ("r2",))
    stack.extend(procs)
    return procs


@pytest.fixture(scope="module")
def gateway(replicas: list[gwkit.Proc], log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    urls = json.dumps([p.url for p in replicas])
    config = (
        '[gateway]\nstate = "memory:"\n'
        f'[[upstream]]\nname = "rep"\nurl = {urls}\nprefix = "rep_"\nhealth_interval = 0.3\n'
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def nap(gw: gwkit.Proc, seconds: float = 0.0, client: httpx.Client | None = None) -> str:
    params = {"name": "rep_nap", "arguments": {"seconds": seconds}}
    return gwkit.call(gw.url, "tools/call", params, client=client).text()


def test_calls_go_round_robin(gateway: gwkit.Proc) -> None:
    # (The gateway is ready once one replica is connected; the other may follow.)
    eventually(lambda: {nap(gateway) for _ in range(4)} == {"r1", "r2"})
    answers = [nap(gateway) for _ in range(6)]
    assert sorted(answers) == ["r1"] * 3 + ["r2"] * 3  # strictly alternating


def test_killing_a_replica_fails_no_idempotent_call(
    gateway: gwkit.Proc, replicas: list[gwkit.Proc]
) -> None:
    r1 = replicas[0]
    failures: list[str] = []
    answered: list[str] = []
    stop = threading.Event()
    go = threading.Event()  # cleared: the stream pauses (so the slow calls alternate)
    go.set()
    lock = threading.Lock()

    def stream() -> None:
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                go.wait()
                try:
                    answer = nap(gateway, 0.0, http)
                except Exception as exc:
                    answer, failure = "", repr(exc)
                else:
                    failure = "" if answer in ("r1", "r2") else answer
                with lock:
                    (failures.append(failure) if failure else answered.append(answer))

    threads = [threading.Thread(target=stream) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        eventually(lambda: len(answered) >= 20)
        go.clear()
        time.sleep(0.3)  # (let the stream's calls in flight finish; not an assertion)
        with ThreadPoolExecutor(4) as pool:  # round robin: two of them on r1 when it dies
            slow = [pool.submit(nap, gateway, 1.5) for _ in range(4)]
            time.sleep(0.5)  # (let them reach the replicas; not an assertion)
            go.set()
            r1.kill()
            results = [f.result() for f in slow]
        assert results == ["r2"] * 4  # r1 died before answering: r2 answered its calls too
        retried = [line for line in gateway.tail(400).splitlines() if "retrying it" in line]
        assert retried, gateway.tail(40)
        mark = len(answered)
        eventually(lambda: len(answered) >= mark + 30)
        assert set(answered[-10:]) == {"r2"}  # out of the rotation
        ready = httpx.get(gateway.base + "/readyz")
        assert ready.status_code == 200 and ready.json()["upstreams"]["rep"] == "up"
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert failures == [], failures[:5]
    r1.restart()
    eventually(lambda: "r1" in {nap(gateway) for _ in range(4)}, 30)


def test_non_idempotent_calls_are_not_retried(gateway: gwkit.Proc) -> None:
    """whoami has no idempotentHint: routed like any call (answers come from a replica)."""
    reply = gwkit.call(gateway.url, "tools/call", {"name": "rep_whoami"})
    assert reply.text() in ("r1", "r2")


def test_replica_lists_are_checked() -> None:
    for url, complaint in (([], "non-empty list"), (["http://a/mcp", "http://a/mcp"], "twice")):
        with pytest.raises(ConfigError, match=complaint):
            parse_config({"upstream": [{"name": "a", "url": url}]})
    single = parse_config({"upstream": [{"name": "a", "url": ["http://a/mcp"]}]}).upstreams[0]
    assert single.url == "http://a/mcp" and single.replicas == ()
