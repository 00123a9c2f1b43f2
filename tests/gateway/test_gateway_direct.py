"""The direct path (``gateway/direct.py``) gives the answers of the server's path.

Two gateway processes with the same policy front the same upstreams: one as shipped (plain
2026-07-28 ``tools/call`` POSTs take the direct path), one with ``direct_calls = false``
(everything takes the server's path).  Each test sends the same requests to both over
real HTTP and compares status, JSON-RPC answer, audit line and metrics; the
``mcp_gateway_direct_calls_total`` counter says which requests the direct path answered,
so a test cannot pass by both gateways falling back to the same code.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gwkit
import httpx
import pytest

from support.mcp import modern_headers

POLICY = """
[gateway]
audit_log = "{audit}"
direct_calls = {direct}

[[rule]]
name = "no-stats"
effect = "deny"
methods = ["tools/call"]
names = ["e_add_tool"]

[[rule]]
name = "no-long-naps"
effect = "deny"
methods = ["tools/call"]
names = ["e_nap"]
when = "args.seconds > 100.0"

[[rate_limit]]
name = "pid-twice"
limit = "2/minute"
methods = ["tools/call"]
names = ["e_pid"]

[result_caps]
"e_blob" = 1000
"""


class Gateway:
    """One gateway process and what it recorded."""

    def __init__(self, proc: gwkit.Proc, audit: Path) -> None:
        self.proc = proc
        self.audit = audit

    def call(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> gwkit.Reply:
        params = {"name": name, "arguments": arguments or {}}
        return gwkit.call(self.proc.url, "tools/call", params, **kw)

    def direct_calls(self) -> float:
        text = httpx.get(self.proc.base + "/metrics", timeout=10).text
        found = re.search(r"^mcp_gateway_direct_calls_total (\S+)$", text, re.M)
        assert found is not None, text
        return float(found.group(1))

    def last_audit(self) -> dict[str, Any]:
        lines = [json.loads(x) for x in self.audit.read_text().splitlines() if x.strip()]
        entry: dict[str, Any] = lines[-1]
        return {k: v for k, v in entry.items() if k not in ("time", "latency_ms")}


@pytest.fixture(scope="module")
def upstreams(log_dir: Path, stack: list[gwkit.Proc]) -> dict[str, gwkit.Proc]:
    procs = gwkit.start_upstreams(log_dir, ("e", gwkit.ECHO), ("d", gwkit.ECHO))
    stack.extend(procs)
    return {"e": procs[0], "d": procs[1]}


def _gateway(
    log_dir: Path, stack: list[gwkit.Proc], upstreams: dict[str, gwkit.Proc], direct: bool
) -> Gateway:
    name = "direct" if direct else "full"
    audit = log_dir / f"audit-{name}.jsonl"
    config = POLICY.format(audit=audit, direct=str(direct).lower())
    for key, proc in upstreams.items():
        config += gwkit.toml_upstream(key, url=proc.url, prefix=f"{key}_", timeout=5)
    proc = gwkit.start_gateway(name, log_dir, config)
    stack.append(proc)
    gateway = Gateway(proc, audit)
    # The direct path takes tools the gateway has seen listed (or called once).
    assert gwkit.call(proc.url, "tools/list").status == 200
    return gateway


@pytest.fixture(scope="module")
def gateways(
    log_dir: Path, stack: list[gwkit.Proc], upstreams: dict[str, gwkit.Proc]
) -> tuple[Gateway, Gateway]:
    return _gateway(log_dir, stack, upstreams, True), _gateway(log_dir, stack, upstreams, False)


Send = Callable[[Gateway], gwkit.Reply]


def both(
    gateways: tuple[Gateway, Gateway], send: Send, *, direct: bool, sealed: bool = False
) -> gwkit.Reply:
    """``send`` to each gateway: the same status, answer (but its id and, when ``sealed``,
    its ``requestState``, sealed with a fresh nonce each time) and audit line; the direct
    path took it on the first gateway iff ``direct``, never on the second."""
    on, off = gateways
    before = on.direct_calls(), off.direct_calls()
    mine, theirs = send(on), send(off)
    assert mine.status == theirs.status, (mine.body, theirs.body)
    assert _comparable(mine.body, sealed) == _comparable(theirs.body, sealed)
    assert mine.headers.get("retry-after") == theirs.headers.get("retry-after")
    assert on.last_audit() == off.last_audit()
    assert on.direct_calls() - before[0] == (1 if direct else 0)
    assert off.direct_calls() == before[1]
    return mine


def _comparable(body: dict[str, Any], sealed: bool) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k != "id"}
    if sealed:
        assert isinstance(out["result"].pop("requestState"), str)
    error = out.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    if isinstance(error, dict) and isinstance(data, dict) and "correlationId" in data:
        # a fresh correlation id per answer, the same everywhere else
        cid = data["correlationId"]
        message = str(error["message"]).replace(cid, "<cid>")
        out["error"] = {**error, "message": message, "data": {**data, "correlationId": "<cid>"}}
    return out


def test_allowed_call(gateways: tuple[Gateway, Gateway]) -> None:
    reply = both(gateways, lambda g: g.call("e_whoami"), direct=True)
    assert reply.status == 200
    assert reply.text() == "e"
    assert reply.result["resultType"] == "complete"
    assert gateways[0].last_audit() == {
        "principal": "anonymous",
        "method": "tools/call",
        "name": "e_whoami",
        "upstream": "e",
        "outcome": "ok",
    }


def test_front_meta_reaches_the_upstream_as_on_the_full_path(
    gateways: tuple[Gateway, Gateway],
) -> None:
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    caps: dict[str, Any] = {"elicitation": {}}
    on = gateways[0]
    before = on.direct_calls()
    seen = [
        gwkit.structured(g.call("e_echo_meta", caps=caps, extra_meta=trace))["meta"]
        for g in gateways
    ]
    assert on.direct_calls() == before + 1
    assert seen[0] == seen[1]  # (as a dict: the upstream echoes it as JSON text)
    assert seen[0]["traceparent"] == trace["traceparent"]
    assert seen[0]["io.modelcontextprotocol/clientCapabilities"] == caps


def test_denied_by_rule(gateways: tuple[Gateway, Gateway]) -> None:
    # Refused on the headers, before the body is read: the same early answer for both.
    reply = both(gateways, lambda g: g.call("e_add_tool", {"name": "x"}), direct=False)
    assert reply.status == 403
    assert gateways[0].last_audit()["outcome"] == "denied"


def test_denied_by_a_rule_on_the_arguments(gateways: tuple[Gateway, Gateway]) -> None:
    # Only decidable with the body: refused by the direct path's access check.
    reply = both(gateways, lambda g: g.call("e_nap", {"seconds": 500.0}), direct=True)
    assert reply.status == 403
    assert reply.error["code"] == -31003
    assert "no-long-naps" in reply.error["message"]
    assert gateways[0].last_audit()["rule"] == "no-long-naps"
    assert both(gateways, lambda g: g.call("e_nap", {"seconds": 0.0}), direct=True).text() == "e"


def test_rate_limited(gateways: tuple[Gateway, Gateway]) -> None:
    for _ in range(2):
        assert both(gateways, lambda g: g.call("e_pid"), direct=True).status == 200
    reply = both(gateways, lambda g: g.call("e_pid"), direct=False)
    assert reply.status == 429
    assert reply.error["code"] == -31029
    assert reply.error["data"]["rule"] == "pid-twice"
    assert gateways[0].last_audit()["outcome"] == "rate_limited:pid-twice"


def test_unknown_tool(gateways: tuple[Gateway, Gateway]) -> None:
    reply = both(gateways, lambda g: g.call("e_no_such_tool"), direct=False)
    assert "error" in reply.body or reply.result.get("isError") is True
    reply = both(gateways, lambda g: g.call("zz_nothing"), direct=False)
    assert reply.error["code"] == -32602


def test_oversize_answer(gateways: tuple[Gateway, Gateway]) -> None:
    assert both(gateways, lambda g: g.call("e_blob", {"size": 10}), direct=True).status == 200
    reply = both(gateways, lambda g: g.call("e_blob", {"size": 5000}), direct=True)
    assert "too large" in reply.error["message"]
    assert reply.error["data"]["limit"] == 1000


def test_upstream_timeout(gateways: tuple[Gateway, Gateway]) -> None:
    reply = both(gateways, lambda g: g.call("e_hold", {"key": "slow", "seconds": 8}), direct=True)
    assert reply.error["code"] == -32603
    assert "Upstream 'e' failed" in reply.error["message"]


def test_client_disconnect_cancels_the_upstream_call(
    gateways: tuple[Gateway, Gateway], upstreams: dict[str, gwkit.Proc]
) -> None:
    for gateway, key, taken in zip(gateways, ("gone-direct", "gone-full"), (1, 0), strict=True):
        before = gateway.direct_calls()
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "e_hold",
                "arguments": {"key": key, "seconds": 4},
                "_meta": gwkit.meta(),
            },
        }
        body = json.dumps(message).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in modern_headers(message).items())
        request = (
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{gateway.proc.port}\r\n{head}"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode() + body
        with socket.create_connection(("127.0.0.1", gateway.proc.port)) as sock:
            sock.sendall(request)
            _wait_for(upstreams["e"], f"held:{key}")
        _wait_for(upstreams["e"], f"cancelled:{key}")
        assert gateway.direct_calls() == before + taken
        # The audit line says the call was cancelled, not that it went through.
        assert _audited(gateway, "e_hold") == {
            "principal": "anonymous",
            "method": "tools/call",
            "name": "e_hold",
            "upstream": None,
            "outcome": "cancelled",
        }
    assert 'outcome="cancelled"' in httpx.get(gateways[0].proc.base + "/metrics").text


def _audited(gateway: Gateway, name: str, timeout: float = 10.0) -> dict[str, Any]:
    """The gateway's last audit line once it is about ``name`` (the line of a cancelled
    call is written as the cancellation unwinds, after the upstream saw it)."""
    deadline = time.monotonic() + timeout
    while (entry := gateway.last_audit())["name"] != name:
        assert time.monotonic() < deadline, entry
        time.sleep(0.05)
    return entry


def _wait_for(upstream: gwkit.Proc, count: str, timeout: float = 10.0) -> None:
    """Until the upstream counted ``count`` once (asked directly, not through a gateway)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = gwkit.call(upstream.url, "tools/call", {"name": "stats", "arguments": {}})
        counts: dict[str, int] = gwkit.structured(reply)
        if counts.get(count, 0) == 1:
            return
        assert time.monotonic() < deadline, f"{count} not counted: {counts}"
        time.sleep(0.1)


def test_requests_the_direct_path_leaves_alone_still_work(
    gateways: tuple[Gateway, Gateway],
) -> None:
    # A task-augmented call (the client declares the tasks extension).
    tasks: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    reply = both(gateways, lambda g: g.call("e_whoami", caps=tasks), direct=False)
    assert reply.text() == "e"
    # An MRTR round: the first call is plain (direct); its resume is not.
    asked = both(
        gateways, lambda g: g.call("e_ask", caps={"elicitation": {}}), direct=True, sealed=True
    )
    assert asked.result["resultType"] == "input_required"
    for gateway in gateways:
        first = gateway.call("e_ask", caps={"elicitation": {}}).result
        [key] = first["inputRequests"]
        answer = {"action": "accept", "content": {"name": "Ada"}}
        retry = {
            "name": "e_ask",
            "arguments": {},
            "inputResponses": {key: answer},
            "requestState": first["requestState"],
        }
        before = gateway.direct_calls()
        resumed = gwkit.call(gateway.proc.url, "tools/call", retry, caps={"elicitation": {}})
        assert resumed.text() == "e greets Ada (accept)", resumed.body
        assert gateway.direct_calls() == before
    # A legacy (2025-11-25) session.
    for gateway in gateways:
        session = gwkit.LegacySession(gateway.proc.url)
        try:
            assert session.initialize().status == 200
            before = gateway.direct_calls()
            legacy = session.request("tools/call", {"name": "e_whoami", "arguments": {}})
            assert legacy.text() == "e"
            assert gateway.direct_calls() == before
        finally:
            session.close()


def test_upstream_down(gateways: tuple[Gateway, Gateway], upstreams: dict[str, gwkit.Proc]) -> None:
    assert both(gateways, lambda g: g.call("d_whoami"), direct=True).text() == "d"
    upstreams["d"].kill()
    first = [g.call("d_whoami") for g in gateways]
    assert first[0].status == first[1].status
    assert first[0].error["code"] == first[1].error["code"]
    # Once the gateway knows (the call above failed): the server's path answers for both.
    reply = both(gateways, lambda g: g.call("d_whoami"), direct=False)
    assert reply.error["code"] == first[0].error["code"]


def _raw(
    gateway: Gateway, message: dict[str, Any] | str, version: str = gwkit.MODERN
) -> gwkit.Reply:
    """One ``tools/call`` of ``e_whoami`` as it is given (a dict, or the body's own text)."""
    headers = modern_headers(
        None, Mcp_Method="tools/call", Mcp_Name="e_whoami", MCP_Protocol_Version=version
    )
    body = message if isinstance(message, str) else json.dumps(message)
    response = httpx.post(gateway.proc.url, headers=headers, content=body, timeout=30)
    return gwkit._reply(response)


def _message(**changes: Any) -> dict[str, Any]:
    """A plain call of ``e_whoami``; ``changes`` replace (None: drop) top-level members,
    ``params__X`` members of params and ``meta__X`` members of ``_meta``."""
    meta = gwkit.meta()
    params: dict[str, Any] = {"name": "e_whoami", "arguments": {}, "_meta": meta}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    for key, value in changes.items():
        where, member = (
            (meta, key[6:])
            if key.startswith("meta__")
            else (params, key[8:])
            if key.startswith("params__")
            else (message, key)
        )
        member = member.replace("_SLASH_", "/")
        if value is None:
            where.pop(member, None)
        else:
            where[member] = value
    return message


PV = "meta__io.modelcontextprotocol_SLASH_protocolVersion"
CAPS = "meta__io.modelcontextprotocol_SLASH_clientCapabilities"
INFO = "meta__io.modelcontextprotocol_SLASH_clientInfo"


@pytest.mark.parametrize(
    "changes",
    [
        {"id": "a string id"},
        {"params__arguments": None},
        {INFO: None},
        {INFO: "not an object"},  # (read by neither path)
        {"meta__traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"meta__tracestate": 5},  # (not a string: not passed on, by either path)
    ],
)
def test_plain_shapes_take_the_direct_path(
    gateways: tuple[Gateway, Gateway], changes: dict[str, Any]
) -> None:
    reply = both(gateways, lambda g: _raw(g, _message(**changes)), direct=True)
    assert reply.text() == "e"


@pytest.mark.parametrize(
    "changes",
    [
        {"extra": 1},  # a member the envelope does not have
        {"id": 1.5},
        {"id": True},
        {"id": None},
        {"jsonrpc": "1.0"},
        {"params": [1]},
        {"params__foo": 1},
        {"params__arguments": [1, 2]},
        {"params__name": "e_pid"},  # not the tool Mcp-Name names
        {"params___meta": None},
        {PV: "2025-11-25"},  # not the header's version
        {PV: 20260728},
        {CAPS: None},
        {CAPS: []},
        {"meta__io.modelcontextprotocol_SLASH_logLevel": "info"},
        {"meta__progressToken": "p"},
        {"meta__other": 1},
    ],
)
def test_other_shapes_take_the_servers_path(
    gateways: tuple[Gateway, Gateway], changes: dict[str, Any]
) -> None:
    both(gateways, lambda g: _raw(g, _message(**changes)), direct=False)


def test_unsupported_version_and_repeated_members_take_the_servers_path(
    gateways: tuple[Gateway, Gateway],
) -> None:
    version = "2099-01-01"
    reply = both(gateways, lambda g: _raw(g, _message(**{PV: version}), version), direct=False)
    assert reply.status == 400
    text = json.dumps(_message())
    repeated = text.replace('"id": 7,', '"id": 7, "id": 8,')
    assert repeated != text
    reply = both(gateways, lambda g: _raw(g, repeated), direct=False)
    assert reply.error["code"] == -32600
