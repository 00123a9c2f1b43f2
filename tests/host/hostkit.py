"""Helpers for the host tests: server configs for real processes, a scripted person, and
Debian's Chromium through Playwright for the web page."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcpkit.host import (
    ConsentDecision,
    ConsentRequest,
    Interaction,
    ServerConfig,
    TrustStore,
    load_config,
    parse_config,
)
from support.servers import kill_group, spawn, tail

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
PEERS = HERE / "peers"
REPO = HERE.parents[1]
#: Debian's Chromium (``.ci/run`` installs it; Playwright never downloads a browser here).
CHROMIUM = "/usr/bin/chromium"
#: Where the browser tests leave their screenshots (outside the repository).
SHOTS = Path("/tmp/host-shots")
#: Screenshots meant to be looked at (the chat, its cards and views, the trust prompt),
#: under the repository's ignored ``test-artifacts/``.
ARTIFACTS = REPO / "test-artifacts" / "host"
#: How long a page waits for a host's server process to start and list its tools (a first
#: page of a module; later page actions keep their own shorter timeouts).
SERVER_START_MS = 60_000
#: Every other wait of a page: generous, because a full run loads both cores with four test
#: workers and a browser per host test (a wait that passes returns as soon as it holds).
PAGE_TIMEOUT_MS = 45_000
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def playwright() -> Any:
    """Playwright's sync API, once Debian's Chromium is known to be there.  Skips without
    either (the whole module when called at its import); in CI, where ``.ci/run`` installs
    both, a missing Chromium is an error."""
    api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run must install chromium")
        pytest.skip(
            f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True
        )
    return api


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium (a Playwright persistent context, 1400x900) with its profile in
    ``profile``; closed on the way out."""
    with playwright().sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,
            headless=True,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def inner_view(proxy_el: Any) -> Any:
    """The view's own frame inside an App view's sandbox proxy element (``app-view``)."""
    return proxy_el.content_frame().wait_for_selector("iframe").content_frame()


def say(page: Any, text: str) -> None:
    """Type ``text`` into the host page's chat box and send it (Enter), as a person would."""
    page.fill("#chat-input", text)
    page.press("#chat-input", "Enter")


def page_post(url: str, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` to the page's API at ``path`` (``/api/...``) of the host whose printed
    URL (with its token) is ``url``; the httpx response."""
    import httpx

    base, token = url.split("/?token=")
    auth = {"Authorization": f"Bearer {token}"}
    return httpx.post(base + path, json=body, headers=auth, timeout=PAGE_TIMEOUT_MS / 1000)


def stdio_server(
    name: str, script: str, folder: Path, python: str | Path = sys.executable, **extra: Any
) -> ServerConfig:
    """A stdio server config running ``servers/<script>`` (or a peer) as a real process."""
    path = script if Path(script).is_absolute() else str(SERVERS / script)
    env = {"HOST_TEST_DIR": str(folder), "SERVER_NAME": name, "PYTHONUNBUFFERED": "1"}
    return ServerConfig(name=name, command=(str(python), path), env=env, **extra)


def calls(folder: Path, server: str) -> list[str]:
    """Tools the server process actually ran, in order."""
    log = folder / f"{server}.calls"
    return log.read_text().split() if log.exists() else []


class Transcripts:
    """A model API answering the n-th streaming request with the n-th transcript of
    ``fixtures/``, one event per chunk; keeps each request's body and headers."""

    def __init__(self, path: str, files: list[str], status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

        async def endpoint(request: Request) -> Response:
            body = await request.json()
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            if status != 200:
                return JSONResponse({"error": {"message": "invalid x-api-key"}}, status_code=status)
            if body.get("stream") is not True:
                return JSONResponse({"error": "this fake only streams"}, status_code=400)
            text = (HERE / "fixtures" / files[len(self.bodies) - 1]).read_text()

            async def events() -> AsyncIterator[bytes]:
                for event in text.split("\n\n"):
                    if event.strip():
                        yield (event + "\n\n").encode()
                        await anyio.sleep(0)

            return StreamingResponse(events(), media_type="text/event-stream")

        self.app = Starlette(routes=[Route(path, endpoint, methods=["POST"])])


class ScriptedPerson(Interaction):
    """Answers like a person would, from rules given by the test; remembers what it saw."""

    def __init__(
        self,
        *,
        consent: bool | Callable[[ConsentRequest], Any] = False,
        name: str = "Ada",
        sampling: bool = False,
    ) -> None:
        self._consent = consent
        self._sampling = sampling
        self.name = name
        self.asked: list[ConsentRequest] = []
        self.elicited: list[tuple[str, dict[str, Any]]] = []
        self.sampled: list[tuple[str, dict[str, Any]]] = []

    async def approve_sampling(self, server: str, params: dict[str, Any]) -> bool:
        self.sampled.append((server, params))
        return self._sampling

    async def consent(self, request: ConsentRequest) -> ConsentDecision | bool:
        self.asked.append(request)
        if callable(self._consent):
            answer: ConsentDecision | bool = self._consent(request)
            return answer
        return self._consent

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.elicited.append((server, params))
        return {"action": "accept", "content": {"name": self.name}}


def trusted_env(
    config: dict[str, Any] | Path,
    folder: Path,
    *,
    trusted: bool = True,
    cwd: Path | None = None,
    environ: dict[str, str] | None = None,
) -> dict[str, str]:
    """An environment whose trust file (in ``folder``, never the user's) already trusts
    every server of ``config`` (or none, with ``trusted=False``), as launched by a host
    running in ``cwd`` (default: this one's) with ``environ`` (default: this one's)."""
    store = TrustStore(folder / "trusted-servers.json", cwd=cwd, environ=environ)
    if trusted:
        parsed = load_config(config) if isinstance(config, Path) else parse_config(config)
        for server in parsed.servers:
            store.trust(server)
    return {**os.environ, "MCPKIT_TRUST_FILE": str(store.path)}


@contextlib.contextmanager
def web_host(
    config: dict[str, Any] | Path,
    folder: Path,
    *extra: str,
    cwd: Path | None = None,
    trusted: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """``mcpkit host --web`` as a real process, started as a person would (``config`` is
    written to ``folder``, or is a file already); yields the URL it prints (with its
    token) and stops it with SIGINT.  Its servers are trusted beforehand unless
    ``trusted=False``."""
    with web_host_process(config, folder, *extra, cwd=cwd, trusted=trusted, env=env) as (_, url):
        yield url


@contextlib.contextmanager
def web_host_process(
    config: dict[str, Any] | Path,
    folder: Path,
    *extra: str,
    cwd: Path | None = None,
    trusted: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """:func:`web_host`, yielding the process too (its output is ``folder/host.log``)."""
    if isinstance(config, Path):
        path = config
    else:
        path = folder / "mcp.json"
        path.write_text(json.dumps(config))
    env = {
        **trusted_env(
            path, folder, trusted=trusted, cwd=cwd, environ={**os.environ, **(env or {})}
        ),
        "MCPKIT_TOKEN_FILE": str(folder / "oauth-tokens.json"),
        "MCPKIT_HOST_DATA": str(folder / "host-data"),
        "MCPKIT_HOST_SETTINGS": str(folder / "host-settings.json"),
        "MCPKIT_KEYRING": "off",
        **(env or {}),
    }
    log = folder / "host.log"
    proc = spawn(
        [sys.executable, "-m", "mcpkit.cli.main", "host", "--web", "--config", str(path), *extra],
        log,
        cwd=cwd,
        env=env,
    )
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            found = re.search(
                r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", log.read_text(errors="replace")
            )
            url = found.group(1) if found else None
        if url is None:
            raise RuntimeError(f"mcpkit host --web did not start:\n{tail(log, 60)}")
        yield proc, url
    finally:
        kill_group(proc, signal.SIGINT, grace=10.0)
