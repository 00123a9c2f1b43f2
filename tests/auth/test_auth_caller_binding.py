"""Callers bound to what they create, on a plain mcpkit server behind ``BearerAuth``: a
listen stream's ``taskIds`` filter delivers only the caller's own tasks; another
caller's task id is kept in the acknowledgement and never streamed, exactly as an
unknown id is.  Real JWTs from the local authorization server, real uvicorn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from authkit import LocalAuthorizationServer

from mcpkit.auth import BearerAuth, JwtVerifier
from mcpkit.cli.target import load_server
from mcpkit.transports.http import McpHttpApp
from support.httpclient import McpHttp
from support.mcp import iter_sse, modern_headers
from support.servers import serve_app
from support.waits import eventually

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

#: A fixture server (shared with the gateway's binding tests): ``hold(key)`` runs as a
#: task until ``release(key)``.
OWNED = Path(__file__).resolve().parents[1] / "servers" / "owned.py"


@pytest.fixture(scope="module")
def protected(local_as: LocalAuthorizationServer) -> Iterator[str]:
    def build(base: str) -> McpHttpApp:
        resource = f"{base}/mcp"
        verifier = JwtVerifier(issuer=local_as.issuer, audience=resource)
        auth = BearerAuth(verifier, resource=resource, authorization_servers=[local_as.issuer])
        return McpHttpApp(load_server(str(OWNED)), auth=auth)

    with serve_app(build) as (base, _):
        yield f"{base}/mcp"


def _caller(url: str, local_as: LocalAuthorizationServer, subject: str) -> McpHttp:
    client = McpHttp(url)
    token = local_as.mint(subject=subject, audience=url, scope="mcp")
    client.http.headers["authorization"] = f"Bearer {token}"
    return client


def _start_task(client: McpHttp, key: str) -> str:
    message = client.modern_request(
        "tools/call", {"name": "hold", "arguments": {"key": key}}, capabilities=TASKS
    )
    created = client.post_json(message, modern_headers(message)).json()["result"]
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


def _status(client: McpHttp, task_id: str) -> dict[str, Any]:
    message = client.modern_request("tasks/get", {"taskId": task_id}, capabilities=TASKS)
    body: dict[str, Any] = client.post_json(message, modern_headers(message)).json()
    return body


def test_listen_does_not_stream_another_callers_task(
    protected: str, local_as: LocalAuthorizationServer
) -> None:
    alice = _caller(protected, local_as, "alice")
    bob = _caller(protected, local_as, "bob")
    try:
        hers = _start_task(alice, "alice-1")
        his = _start_task(bob, "bob-1")
        # Bob's tasks/get on her task is refused as an unknown one...
        refused = _status(bob, hers)["error"]
        unknown = _status(bob, "no-such-task")["error"]
        assert refused["code"] == unknown["code"]
        assert refused["message"] == unknown["message"].replace("no-such-task", hers)
        # ...and his listen names her task next to his own: hers is acknowledged as any
        # unknown id would be, and only his own task's notifications arrive.
        params = {"notifications": {"taskIds": [hers, his]}}
        # (read raw: notifications/tasks belongs to the tasks extension, not the core
        # schema the helper's streams are checked against)
        listen = bob.modern_request("subscriptions/listen", params, capabilities=TASKS)
        with bob.http.stream(
            "POST", protected, content=json.dumps(listen), headers=modern_headers(listen)
        ) as response:
            assert response.status_code == 200
            messages = (json.loads(e.data) for e in iter_sse(response.iter_lines()) if e.data)
            ack = next(messages)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"]["taskIds"] == [hers, his]
            # Her task ends first (seen by her), then his: a stream that carried her
            # events would have delivered hers before his.
            alice.modern("tools/call", {"name": "release", "arguments": {"key": "alice-1"}})
            eventually(
                lambda: _status(alice, hers)["result"].get("status") == "completed",
                10,
                "alice's task completes",
            )
            bob.modern("tools/call", {"name": "release", "arguments": {"key": "bob-1"}})
            seen = []
            for message in messages:
                seen.append(message)
                params_seen = message.get("params", {})
                if params_seen.get("taskId") == his and params_seen.get("status") == "completed":
                    break
        assert [m for m in seen if m.get("params", {}).get("taskId") == hers] == []
        assert not any("owned finished alice-1" in str(m) for m in seen)
    finally:
        alice.close()
        bob.close()
