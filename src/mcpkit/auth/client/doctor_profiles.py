"""What each MCP client does when it signs in, as far as a server's setup decides its
success: the profiles ``mcpkit auth doctor`` walks a server's sign-in with
(:mod:`.doctor`).  Each fact names where it comes from; what a client does changes, so
these are re-checked when the clients update."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["PROFILES", "ClientProfile"]


@dataclass(frozen=True, slots=True)
class ClientProfile:
    """How one MCP client signs in, as far as a server's setup decides its success.

    ``registration``: the ways it can identify itself, in the order it tries them
    (``"cimd"``: a Client ID Metadata Document, ``"dcr"``: RFC 7591 dynamic registration);
    ``cimd_needs_none``: it uses CIMD only when ``"none"`` is among the token endpoint's
    auth methods (its document declares a public client); ``manual_client``: a user can
    give it a client id registered by hand when neither works; ``offline_access``: it adds
    ``offline_access`` to the scopes when the authorization server lists it.  Every
    profile sends the RFC 8707 ``resource``, refuses an authorization server without
    PKCE S256 and asks for the challenge's scope, else the resource metadata's
    ``scopes_supported``, else no scope at all (never the authorization server's list)."""

    name: str
    title: str
    registration: tuple[str, ...]
    cimd_needs_none: bool
    manual_client: bool
    offline_access: bool
    source: str


# Where each fact comes from (what a client does changes; re-check these on updates):
PROFILES: Final[dict[str, ClientProfile]] = {
    profile.name: profile
    for profile in (
        ClientProfile(
            "claude",
            "Claude (claude.ai, Desktop, Code)",
            ("cimd", "dcr"),
            cimd_needs_none=True,
            manual_client=False,
            offline_access=True,
            # DCR and CIMD out of the box, CIMD only with "none" advertised; other client
            # credentials only by arrangement with Anthropic:
            # claude.com/docs/connectors/building/authentication.  Scope from the challenge
            # or the resource metadata, none otherwise, offline_access when the AS lists it:
            # code.claude.com/docs/en/mcp (anthropics/claude-code issue 4540).
            source="claude.com/docs/connectors/building/authentication; "
            "code.claude.com/docs/en/mcp",
        ),
        ClientProfile(
            "chatgpt",
            "ChatGPT (apps and connectors)",
            ("cimd", "dcr"),
            cimd_needs_none=False,
            manual_client=True,
            offline_access=False,
            # CIMD, DCR or a predefined OAuth client; PKCE; the resource parameter echoed
            # throughout the flow: developers.openai.com/apps-sdk/build/auth.
            source="developers.openai.com/apps-sdk/build/auth",
        ),
        ClientProfile(
            "vscode",
            "VS Code (GitHub Copilot chat)",
            ("cimd", "dcr"),
            cimd_needs_none=False,
            manual_client=True,
            offline_access=False,
            # DCR on a 401 (microsoft/vscode issue 257415); a client id and secret typed in
            # when the AS has no DCR (microsoft/vscode-docs pull 8689); CIMD shipped (noted
            # in anomalyco/opencode pull 47743).
            source="code.visualstudio.com/api/extension-guides/ai/mcp",
        ),
        ClientProfile(
            "inspector",
            "MCP Inspector",
            ("dcr",),
            cimd_needs_none=False,
            manual_client=True,
            offline_access=False,
            # The TypeScript SDK's auth() registers dynamically when it holds no client
            # information; the Inspector's OAuth settings take a client id by hand.
            source="github.com/modelcontextprotocol/inspector",
        ),
        ClientProfile(
            "mcpkit",
            "mcpkit (OAuthClientAuth)",
            ("dcr",),
            cimd_needs_none=False,
            manual_client=True,
            offline_access=True,
            # mcpkit.auth.client.authcode.AuthorizationCodeGrant: a pre-registered client_id,
            # else CIMD when client_metadata_url is configured, else DCR;
            # OAuthEngine.select_scopes for the scope.
            source="mcpkit.auth.client",
        ),
    )
}
