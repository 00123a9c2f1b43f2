"""``mcpkit auth doctor URL``: the sign-in walk, as a user runs it, against the example
authorization server and protected server as real processes (every step ok, a token, an
authenticated call and a refresh), and against deliberately broken setups served here, each
test named after what the doctor must say."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from authkit import ROOT, LocalAuthorizationServer

from support.servers import free_port, kill_group, run_mcpkit, serve_app, spawn, wait_http

EXAMPLES = ROOT / "examples" / "auth"


def doctor(tmp_path: Path, url: str, *args: str) -> tuple[int, dict[str, Any]]:
    """``mcpkit auth doctor URL --json ARGS``: its exit status and its report."""
    done = run_mcpkit("auth", "doctor", url, "--json", *args, cwd=tmp_path)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def steps(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["step"]: step for step in report["steps"]}


@contextlib.contextmanager
def examples_running(tmp_path: Path) -> Iterator[str]:
    """examples/auth/local_as.py and protected_server.py as a user starts them; yields the
    MCP server's URL."""
    as_port, mcp_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{as_port}"
    authz = spawn(
        [sys.executable, str(EXAMPLES / "local_as.py"), "--port", str(as_port)],
        tmp_path / "as.log",
    )
    server = spawn(
        [
            sys.executable,
            str(EXAMPLES / "protected_server.py"),
            "--issuer",
            issuer,
            "--port",
            str(mcp_port),
        ],
        tmp_path / "server.log",
    )
    url = f"http://127.0.0.1:{mcp_port}/mcp"
    try:
        wait_http(f"{issuer}/.well-known/oauth-authorization-server", authz, tmp_path / "as.log")
        wait_http(url, server, tmp_path / "server.log")
        yield url
    finally:
        kill_group(server)
        kill_group(authz)


@contextlib.contextmanager
def protected_by(make_as: Callable[[str], LocalAuthorizationServer]) -> Iterator[str]:
    """The example protected server in front of the authorization server ``make_as(base)``
    (both served here); yields the MCP server's URL."""
    import protected_server

    with (
        serve_app(make_as) as (_, authz),
        serve_app(lambda base: protected_server.build_app(authz.issuer, f"{base}/mcp")) as (
            base,
            _,
        ),
    ):
        yield f"{base}/mcp"


class WithoutS256(LocalAuthorizationServer):
    """An authorization server that does not advertise PKCE S256."""

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "code_challenge_methods_supported": ["plain"]}


class WithoutRegistration(LocalAuthorizationServer):
    """A provider without dynamic registration or Client ID Metadata Documents."""

    def metadata(self) -> dict[str, Any]:
        doc = super().metadata()
        del doc["registration_endpoint"]
        return doc


class NamingAnotherIssuer(LocalAuthorizationServer):
    """Metadata whose ``issuer`` is not the URL the resource names (a proxy's own URL)."""

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "issuer": "https://login.example.com/tenant"}


def test_the_examples_pass_every_step_with_a_token_a_call_and_a_refresh(tmp_path: Path) -> None:
    with examples_running(tmp_path) as url:
        status, report = doctor(tmp_path, url, "--client", "claude")
        text = run_mcpkit("auth", "doctor", url, cwd=tmp_path)
    found = steps(report)
    assert status == 0 and report["ok"] is True, report
    assert {s["status"] for s in report["steps"]} == {"ok"}, report
    for step in ("challenge", "resource-metadata", "resource", "as-metadata", "pkce"):
        assert found[step]["status"] == "ok"
    assert "scope=mcp" in found["challenge"]["detail"]
    assert found["registration"]["detail"].endswith("uses dynamic registration")
    assert found["scope"]["detail"] == "sends scope=mcp offline_access"
    assert found["token"]["detail"] == "Bearer token with a refresh token"
    assert found["audience"]["detail"] == f"aud = {url}"
    assert found["call"]["detail"] == "initialize with the token: HTTP 200"
    assert found["refresh"]["status"] == "ok"
    assert found["call-after-refresh"]["status"] == "ok"
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.splitlines()[0].startswith("ok    challenge ")
    assert f"mcpkit would sign in to {url}" in text.stdout


def test_a_resource_mismatch_fails_naming_the_url_the_client_used(tmp_path: Path) -> None:
    import protected_server

    with (
        serve_app(lambda base: LocalAuthorizationServer(base)) as (_, authz),
        serve_app(lambda base: protected_server.build_app(authz.issuer, f"{base}/api")) as (
            base,
            _,
        ),
    ):
        status, report = doctor(tmp_path, f"{base}/mcp", "--client", "chatgpt")
    resource = steps(report)["resource"]
    assert status == 1 and report["ok"] is False
    assert resource["status"] == "FAIL"
    assert f"says resource '{base}/api'" in resource["detail"]
    assert f'set "resource" to "{base}/mcp"' in resource["fix"]
    assert "token" not in steps(report)  # nothing is asked of the AS for the wrong resource


def test_an_authorization_server_without_s256_fails_at_pkce(tmp_path: Path) -> None:
    with protected_by(WithoutS256) as url:
        status, report = doctor(tmp_path, url)
    found = steps(report)
    assert status == 1
    assert found["pkce"]["status"] == "FAIL"
    assert "['plain']" in found["pkce"]["detail"]
    assert '"code_challenge_methods_supported": ["S256"]' in found["pkce"]["fix"]
    assert found["live"]["status"] == "skip"  # no registration or token request was made


def test_no_registration_endpoint_fails_for_claude_which_needs_dcr_or_cimd(
    tmp_path: Path,
) -> None:
    with protected_by(WithoutRegistration) as url:
        status, report = doctor(tmp_path, url, "--client", "claude")
        vscode_status, vscode = doctor(tmp_path, url, "--client", "vscode")
    registration = steps(report)["registration"]
    assert status == 1
    assert registration["status"] == "FAIL"
    assert "no registration_endpoint, no CIMD" in registration["detail"]
    assert "enable dynamic client registration" in registration["fix"]
    # VS Code lets its user paste a client id registered by hand: a warning, not a failure.
    assert vscode_status == 0, vscode
    assert steps(vscode)["registration"]["status"] == "warn"
    assert "the user must paste a client id" in steps(vscode)["registration"]["detail"]


def test_an_issuer_mismatch_fails_naming_both_issuers(tmp_path: Path) -> None:
    with protected_by(NamingAnotherIssuer) as url:
        status, report = doctor(tmp_path, url, "--client", "inspector")
    found = steps(report)
    assert status == 1
    assert found["resource-metadata"]["status"] == "ok"
    assert found["as-metadata"]["status"] == "FAIL"
    assert "https://login.example.com/tenant" in found["as-metadata"]["detail"]
    issuer = found["resource-metadata"]["detail"].rsplit(" ", 1)[-1]
    assert f'say "issuer": "{issuer}" exactly' in found["as-metadata"]["fix"]


class AskingForALogin(LocalAuthorizationServer):
    """An authorization endpoint that shows a login page instead of approving at once."""

    def authorize(self, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        return 200, b"<!doctype html><title>Sign in</title>", {"content-type": "text/html"}


class IgnoringResource(LocalAuthorizationServer):
    """Tokens for a fixed audience whatever ``resource`` asked for (an ``api://`` app id)."""

    def mint(self, **claims: Any) -> str:
        return super().mint(**{**claims, "audience": "api://mcp-app"})


def test_a_login_page_is_skipped_headless_and_asks_for_interactive(tmp_path: Path) -> None:
    with protected_by(AskingForALogin) as url:
        status, report = doctor(tmp_path, url)
    found = steps(report)
    assert status == 0, report  # nothing fails: the walk stops where a person is needed
    assert found["client"]["status"] == "ok"  # the registration was real
    assert found["token"]["status"] == "skip"
    assert "run again with --interactive" in found["token"]["detail"]


def test_a_token_for_another_audience_is_named_and_the_call_fails(tmp_path: Path) -> None:
    with protected_by(IgnoringResource) as url:
        status, report = doctor(tmp_path, url)
    found = steps(report)
    assert status == 1
    assert found["audience"]["status"] == "warn"
    assert "'api://mcp-app'" in found["audience"]["detail"]
    assert "--auth-audience api://mcp-app" in found["audience"]["fix"]
    assert found["call"]["status"] == "FAIL"
    assert "HTTP 401" in found["call"]["detail"]


def test_the_authorization_step_goes_through_the_redirect_handler(tmp_path: Path) -> None:
    """What ``--interactive`` does, with an HTTP client standing in for the person's
    browser: the loopback listener receives the real redirect and the walk goes on."""
    import httpx

    from mcpkit.auth.client import LoopbackRedirectHandler
    from mcpkit.auth.client.doctor import diagnose

    opened: list[str] = []

    def browser(url: str) -> None:
        opened.append(url)
        httpx.get(url, follow_redirects=True, timeout=10)

    with protected_by(LocalAuthorizationServer) as url:
        report = diagnose(url, redirect_handler=LoopbackRedirectHandler(open_url=browser))
    assert report.ok, [f.line() for f in report.findings]
    assert [f.step for f in report.findings if f.status == "ok"][-2:] == [
        "refresh",
        "call-after-refresh",
    ]
    assert len(opened) == 1 and "code_challenge_method=S256" in opened[0]


class MetadataDocumentsForConfidentialClients(LocalAuthorizationServer):
    """Client ID Metadata Documents but no public clients (no ``"none"`` auth method) and
    no dynamic registration."""

    def metadata(self) -> dict[str, Any]:
        doc = super().metadata()
        del doc["registration_endpoint"]
        doc["client_id_metadata_document_supported"] = True
        doc["token_endpoint_auth_methods_supported"] = ["client_secret_basic"]
        return doc


def test_cimd_without_public_clients_fails_for_claude_and_passes_for_chatgpt(
    tmp_path: Path,
) -> None:
    with protected_by(MetadataDocumentsForConfidentialClients) as url:
        claude_status, claude = doctor(tmp_path, url, "--client", "claude")
        chatgpt_status, chatgpt = doctor(tmp_path, url, "--client", "chatgpt")
    assert claude_status == 1
    assert steps(claude)["registration"]["status"] == "FAIL"
    assert 'CIMD without "none"' in steps(claude)["registration"]["detail"]
    assert chatgpt_status == 0, chatgpt
    assert steps(chatgpt)["registration"]["detail"].endswith("uses Client ID Metadata Document")
    assert steps(chatgpt)["client"]["status"] == "skip"  # its document is ChatGPT's to host
