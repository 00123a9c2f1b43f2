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
from typing import Any

from .config import UpstreamOAuth


def upstream_auth(oauth: UpstreamOAuth, url: str) -> Any:
    """The ``httpx.Auth`` for one upstream (needs the ``auth`` extra: joserfc)."""
    from ..auth.client import ClientCredentialsAuth, InMemoryTokenStore, UrlPolicy

    key: Any = None
    if oauth.private_key_file is not None:
        text = Path(oauth.private_key_file).read_text()
        key = json.loads(text) if text.lstrip().startswith("{") else text  # JWK or PEM
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
