"""Credentials the gateway presents *to* an upstream (never the front caller's token).

Static headers are sent as configured.  ``[upstream.oauth]`` builds a
:class:`mcpkit.auth.client.ClientCredentialsAuth`: on the upstream's first 401 it reads the
upstream's protected-resource metadata, discovers the authorization server and obtains a
token with the client-credentials grant (secret or ``private_key_jwt``) for the RFC 8707
``resource`` of the upstream; the token is cached and renewed when it expires or the
upstream refuses it.  The object lives as long as the upstream's entry, so a reconnect
(or a restarted upstream) reuses the cached token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import UpstreamOAuth


def read_private_key(path: str) -> Any:
    """A ``private_key_jwt`` signing key from a PEM file or a JWK (JSON) file, loaded
    (and so checked) by ``mcpkit.auth.client``."""
    from ..auth.client.clientauth import load_private_key

    text = Path(path).read_text()
    key = load_private_key(json.loads(text) if text.lstrip().startswith("{") else text)
    # joserfc imports any other text as a symmetric ("oct") key: refuse it here rather
    # than sign nothing useful at the first connection.
    if getattr(key, "key_type", None) not in ("RSA", "EC", "OKP") or not key.is_private:
        raise ValueError("not a private RSA, EC or OKP key (PEM or JWK)")
    return key


def upstream_auth(oauth: UpstreamOAuth, url: str) -> Any:
    """The ``httpx.Auth`` for one upstream (needs the ``auth`` extra: joserfc)."""
    from ..auth.client import ClientCredentialsAuth, InMemoryTokenStore, UrlPolicy

    key = read_private_key(oauth.private_key_file) if oauth.private_key_file else None
    policy = UrlPolicy.local_development() if oauth.allow_loopback else UrlPolicy()
    return ClientCredentialsAuth(
        oauth.client_id,
        client_secret=oauth.client_secret,
        private_key=key,
        server_url=url,
        store=InMemoryTokenStore(),
        policy=policy,
        scopes=list(oauth.scopes) or None,
    )
