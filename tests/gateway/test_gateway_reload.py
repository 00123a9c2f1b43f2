"""Live reload under load: a stream of calls runs while the config is swapped by SIGHUP
(one upstream added, one removed, then an invalid file), and no call to the upstream that
stayed fails; then ``--watch`` picks up an edit of the file by itself.

Real processes: three HTTP upstreams (``keep``, ``gone``, ``new``), a ``mcpkit gateway``
process, client threads calling ``keep_whoami`` over real sockets, and a front
``subscriptions/listen`` stream that must hear ``tools/list_changed``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

from support.mcp import modern_headers
from support.waits import eventually

CALLERS = 4


@pytest.fixture(scope="module")
def upstreams(log_dir: Path, stack: list[gwkit.Proc]) -> dict[str, gwkit.Proc]:
    procs = gwkit.start_upstreams(log_dir, ("keep",), ("gone",), ("new",))
    stack.extend(procs)
    return {p.name: p for p in procs}


def config(upstreams: dict[str, gwkit.Proc], *names: str, audit: Path | None = None) -> str:
    head = '[gateway]\nstate = "memory:"\n'
    if audit is not None:
        head += f'audit_log = "{audit}"\n'
    return head + "".join(
        gwkit.toml_upstream(n, url=upstreams[n].url, prefix=f"{n}_") for n in names
    )


def tool_names(gw: gwkit.Proc) -> set[str]:
    return {t["name"] for t in gwkit.call(gw.url, "tools/list").result["tools"]}


def reloads(gw: gwkit.Proc) -> dict[str, float]:
    out = {}
    for line in httpx.get(gw.base + "/metrics").text.splitlines():
        if line.startswith("mcp_gateway_config_reloads_total{"):
            label, value = line.rsplit(" ", 1)
            out[label.split('"')[1]] = float(value)
    return out


def discover_count(gw: gwkit.Proc) -> int:
    """How often ``keep`` was connected to (each connection starts with server/discover)."""
    counts = gwkit.structured(gwkit.call(gw.url, "tools/call", {"name": "keep_stats"}))
    return int(counts.get("server/discover", 0))


class Load:
    """Threads calling ``keep_whoami`` back to back, each on its own keep-alive client."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ok = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run) for _ in range(CALLERS)]

    def _run(self) -> None:
        with httpx.Client(timeout=30) as http:
            while not self._stop.is_set():
                try:
                    reply = gwkit.call(self.url, "tools/call", {"name": "keep_whoami"}, client=http)
                    good = reply.status == 200 and reply.text() == "keep"
                    detail = f"HTTP {reply.status} {reply.body}"
                except Exception as exc:  # a dropped connection is a failed call too
                    good, detail = False, repr(exc)
                with self._lock:
                    if good:
                        self.ok += 1
                    else:
                        self.failures.append(detail)

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def count(self) -> int:
        with self._lock:
            return self.ok


class Listener:
    """A front ``subscriptions/listen`` stream, read in a thread."""

    def __init__(self, url: str) -> None:
        self.notes: list[str] = []
        self.ready = threading.Event()
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": gwkit.meta()},
        }
        self._http = httpx.Client(timeout=None)
        self._thread = threading.Thread(target=self._run, args=(url, body), daemon=True)
        self._thread.start()
        assert self.ready.wait(10)

    def _run(self, url: str, body: dict[str, Any]) -> None:
        headers = modern_headers(body)
        try:
            with self._http.stream("POST", url, headers=headers, content=json.dumps(body)) as r:
                for line in r.iter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        message = json.loads(line[5:])
                        if "method" in message:
                            self.notes.append(message["method"])
                        self.ready.set()
        except httpx.HTTPError:
            pass

    def close(self) -> None:
        self._http.close()


def test_reload_under_load_loses_no_call_to_the_upstream_that_stayed(
    upstreams: dict[str, gwkit.Proc], log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    gw = gwkit.start_gateway("gateway", log_dir, config(upstreams, "keep", "gone"))
    stack.append(gw)
    path = log_dir / "gateway.toml"
    assert {"keep_whoami", "gone_whoami"} <= tool_names(gw)
    connects = discover_count(gw)
    assert connects >= 1
    listener = Listener(gw.url)
    try:
        with Load(gw.url) as load:
            eventually(lambda: load.count() >= 20)
            # 1. add "new", remove "gone" (with a call in flight on "gone": it finishes there)
            with ThreadPoolExecutor(1) as pool:
                in_flight = pool.submit(
                    gwkit.call,
                    gw.url,
                    "tools/call",
                    {"name": "gone_nap", "arguments": {"seconds": 2}},
                )
                time.sleep(0.5)  # (let it reach "gone"; not an assertion)
                path.write_text(config(upstreams, "keep", "new"))
                os.kill(gw.proc.pid, signal.SIGHUP)
                eventually(lambda: reloads(gw).get("applied") == 1.0)
                assert in_flight.result().text() == "gone"
            names = tool_names(gw)
            assert "new_whoami" in names and "gone_whoami" not in names, names
            assert gwkit.call(gw.url, "tools/call", {"name": "new_whoami"}).text() == "new"
            gone = gwkit.call(gw.url, "tools/call", {"name": "gone_whoami"})
            assert "error" in gone.body
            eventually(lambda: "notifications/tools/list_changed" in listener.notes)
            before = load.count()
            eventually(lambda: load.count() >= before + 20)
            # 2. an invalid file: kept config, one log line, counted
            path.write_text(config(upstreams, "keep") + '[[upstream]]\nname = "x"\n')
            os.kill(gw.proc.pid, signal.SIGHUP)
            eventually(lambda: reloads(gw).get("rejected") == 1.0)
            assert {"keep_whoami", "new_whoami"} <= tool_names(gw)
            rejected = [line for line in gw.tail(200).splitlines() if "reload rejected" in line]
            assert len(rejected) == 1 and "exactly one of url or command" in rejected[0]
            before = load.count()
            eventually(lambda: load.count() >= before + 20)
    finally:
        listener.close()
    assert discover_count(gw) == connects  # "keep" kept its connection through both
    assert load.failures == [], load.failures[:5]
    assert load.ok > 60
    ready = httpx.get(gw.base + "/readyz").json()["upstreams"]
    assert set(ready) == {"keep", "new"}  # the removed upstream is gone from health too
    gw.stop()


def test_watch_reloads_when_the_file_changes(
    upstreams: dict[str, gwkit.Proc], log_dir: Path, stack: list[gwkit.Proc]
) -> None:
    gw = gwkit.start_gateway("watcher", log_dir, config(upstreams, "keep"), flags=["--watch"])
    stack.append(gw)
    assert tool_names(gw) >= {"keep_whoami"} and "new_whoami" not in tool_names(gw)
    audit = log_dir / "watcher-audit.jsonl"
    (log_dir / "watcher.toml").write_text(config(upstreams, "keep", "new", audit=audit))
    eventually(lambda: "new_whoami" in tool_names(gw))
    assert reloads(gw) == {"applied": 1.0}
    assert gwkit.call(gw.url, "tools/call", {"name": "new_whoami"}).text() == "new"
    lines = [json.loads(x) for x in audit.read_text().splitlines()]  # the new audit log
    assert any(x["name"] == "new_whoami" and x["outcome"] == "ok" for x in lines), lines
    # A rule change alone changes what callers may list: listeners hear about it too.
    listener = Listener(gw.url)
    try:
        rule = '[[rule]]\neffect = "deny"\nmethods = ["tools/call"]\nnames = ["keep_*"]\n'
        (log_dir / "watcher.toml").write_text(rule + config(upstreams, "keep", "new"))
        eventually(lambda: "keep_whoami" not in tool_names(gw))
        eventually(lambda: "notifications/tools/list_changed" in listener.notes)
    finally:
        listener.close()
    assert "new_whoami" in tool_names(gw)
    # A misspelt key is refused on reload as at start: the running config stays.
    typo = '[[rule]]\neffect = "deny"\nmethods = ["tools/call"]\nnmes = ["new_*"]\n'
    (log_dir / "watcher.toml").write_text(typo + config(upstreams, "keep", "new"))
    eventually(lambda: reloads(gw).get("rejected") == 1.0)
    rejected = [line for line in gw.tail(200).splitlines() if "reload rejected" in line]
    assert len(rejected) == 1 and "rule[0].nmes" in rejected[0], rejected
    assert "new_whoami" in tool_names(gw) and "keep_whoami" not in tool_names(gw)
    gw.stop()
