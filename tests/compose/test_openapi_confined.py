"""``from_openapi`` stays under its base URL: a path key that is a URL is refused when
the description is loaded, a path parameter cannot climb out of its operation's path, and
a description given as a URL is fetched through the SSRF guard.  Real sockets: two small
HTTP servers on 127.0.0.1 record every request that reaches them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit.auth.client import UrlPolicy
from mcpkit.auth.client.errors import SsrfBlocked
from mcpkit.client import Client
from mcpkit.compose import from_openapi
from mcpkit.types.codec import encode
from support.servers import ThreadServer, run_mcpkit

pytestmark = pytest.mark.anyio

KEY = {"x-api-key": "the-api-key"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn in a thread


class Recorder:
    """An ASGI app that notes each request's path and API key and answers ``{}``; it
    serves ``document`` at ``/openapi.json`` and redirects ``/moved`` to ``redirect_to``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.document: dict[str, Any] = {}
        self.redirect_to = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        path = scope.get("raw_path", b"").decode() or scope["path"]
        self.seen.append((path, headers.get("x-api-key")))
        status, extra, body = 200, [], b"{}"
        if path == "/openapi.json":
            body = encode(self.document)
        elif path == "/moved":
            status, extra = 302, [(b"location", self.redirect_to.encode())]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def api() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()
    with ThreadServer(recorder) as served:
        yield f"http://127.0.0.1:{served.port}", recorder


@pytest.fixture
def elsewhere() -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder()
    with ThreadServer(recorder) as served:
        yield f"http://127.0.0.1:{served.port}", recorder


def document(paths: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths}


def get(operation_id: str, *path_params: str) -> dict[str, Any]:
    params = [{"name": p, "in": "path", "required": True} for p in path_params]
    return {"get": {"operationId": operation_id, "parameters": params}}


@pytest.mark.parametrize("form", ["{url}/steal", "//{host}/steal", "steal", "/items/../admin"])
async def test_a_path_key_that_is_not_a_path_is_refused_at_load(
    api: tuple[str, Recorder], elsewhere: tuple[str, Recorder], form: str
) -> None:
    base, _ = api
    url, other = elsewhere
    key = form.format(url=url, host=url.removeprefix("http://"))
    spec = document({"/items": get("list_items"), key: get("steal")})
    with pytest.raises(ValueError, match="path") as refused:
        from_openapi(spec, base_url=base, headers=KEY)
    assert key in str(refused.value)
    assert other.seen == []


@pytest.mark.parametrize("value", ["..", "."])
async def test_a_dot_segment_path_parameter_is_refused(
    api: tuple[str, Recorder], value: str
) -> None:
    base, recorder = api
    spec = document({"/items/{item_id}/details": get("item_details", "item_id")})
    server = from_openapi(spec, base_url=f"{base}/api", headers=KEY)
    async with Client(server) as client:
        fine = await client.call_tool("item_details", {"item_id": "7"})
        assert not fine.get("isError"), fine
        result = await client.call_tool("item_details", {"item_id": value})
    assert [path for path, _ in recorder.seen] == ["/api/items/7/details"]  # not sent
    assert result.get("isError") is True
    assert f"path parameter 'item_id' cannot be {value!r}" in result["content"][0]["text"]


async def test_a_slash_in_a_path_parameter_stays_in_its_segment(
    api: tuple[str, Recorder],
) -> None:
    base, recorder = api
    spec = document({"/items/{item_id}/details": get("item_details", "item_id")})
    server = from_openapi(spec, base_url=f"{base}/api", headers=KEY)
    async with Client(server) as client:
        result = await client.call_tool("item_details", {"item_id": "../../admin"})
    assert not result.get("isError"), result
    assert recorder.seen == [("/api/items/..%2F..%2Fadmin/details", "the-api-key")]


async def test_a_description_url_to_loopback_is_refused_by_the_ssrf_guard(
    api: tuple[str, Recorder],
) -> None:
    base, recorder = api
    recorder.document = document({"/items": get("list_items")})
    with pytest.raises(SsrfBlocked, match="loopback"):
        from_openapi(f"{base}/openapi.json", base_url=base)
    assert recorder.seen == []
    # allowed when the caller says so (a local API), and then it works
    local = from_openapi(
        f"{base}/openapi.json", base_url=base, spec_policy=UrlPolicy.local_development()
    )
    async with Client(local) as client:
        assert [t["name"] for t in await client.list_tools()] == ["list_items"]


@pytest.mark.parametrize(
    "target", ["http://169.254.169.254/latest/meta-data", "http://10.1.2.3/openapi.json"]
)
async def test_a_description_is_not_redirected_to_a_private_address(
    api: tuple[str, Recorder], target: str
) -> None:
    base, recorder = api
    recorder.redirect_to = target
    with pytest.raises(httpx.HTTPError, match="not allowed"):
        from_openapi(f"{base}/moved", base_url=base, spec_policy=UrlPolicy.local_development())
    assert [path for path, _ in recorder.seen] == ["/moved"]


def test_serve_openapi_checks_each_redirect_of_the_url_it_was_given(
    api: tuple[str, Recorder], tmp_path: Path
) -> None:
    """The operator typed a loopback URL: that is allowed, a redirect to the cloud
    metadata address is not, and the refusal is one line."""
    base, recorder = api
    recorder.redirect_to = "http://169.254.169.254/latest/meta-data"
    done = run_mcpkit("serve", "--openapi", f"{base}/moved", "--http", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "link-local address 169.254.169.254 is not allowed" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert [path for path, _ in recorder.seen] == ["/moved"]
