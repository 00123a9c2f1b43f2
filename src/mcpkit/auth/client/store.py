"""Where the OAuth client keeps tokens (per resource) and client registrations (per
authorization-server issuer: credentials from one AS are never offered to another)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

__all__ = ["ClientInfo", "FileTokenStore", "InMemoryTokenStore", "TokenSet", "TokenStore"]

V = TypeVar("V")


@dataclass(slots=True)
class _Stored:
    """A record a token store keeps as JSON: every field out, the known fields back in
    (a file written by another version may have more or fewer)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(slots=True)
class TokenSet(_Stored):
    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scopes: list[str] = field(default_factory=list)
    issuer: str | None = None
    resource: str | None = None

    def expired(self, skew_s: float = 30.0, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at - skew_s

    @property
    def is_dpop(self) -> bool:
        return self.token_type.lower() == "dpop"

    def __repr__(self) -> str:  # never print secrets
        return (
            f"TokenSet(token_type={self.token_type!r}, expires_at={self.expires_at!r}, "
            f"refresh={'yes' if self.refresh_token else 'no'}, scopes={self.scopes!r}, "
            f"issuer={self.issuer!r})"
        )


@dataclass(slots=True)
class ClientInfo(_Stored):
    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    issuer: str | None = None
    secret_expires_at: float | None = None
    registration: str = "dynamic"  # "pre-registered" | "metadata-document" | "dynamic"

    def usable(self, now: float | None = None) -> bool:
        if self.secret_expires_at in (None, 0):
            return True
        return (now if now is not None else time.time()) < float(self.secret_expires_at or 0)

    def __repr__(self) -> str:
        return (
            f"ClientInfo(client_id={self.client_id!r}, auth_method={self.auth_method!r}, "
            f"issuer={self.issuer!r}, secret={'yes' if self.client_secret else 'no'})"
        )


@runtime_checkable
class TokenStore(Protocol):
    def get_tokens(self, resource: str) -> TokenSet | None: ...

    def set_tokens(self, resource: str, tokens: TokenSet | None) -> None: ...

    def get_client(self, issuer: str) -> ClientInfo | None: ...

    def set_client(self, issuer: str, client: ClientInfo | None) -> None: ...


class InMemoryTokenStore:
    """Tokens for the life of the process."""

    def __init__(self) -> None:
        self._tokens: dict[str, TokenSet] = {}
        self._clients: dict[str, ClientInfo] = {}

    def get_tokens(self, resource: str) -> TokenSet | None:
        return self._tokens.get(resource)

    def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        _put(self._tokens, resource, tokens)

    def get_client(self, issuer: str) -> ClientInfo | None:
        return self._clients.get(issuer)

    def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        _put(self._clients, issuer, client)


class FileTokenStore:
    """A JSON file readable only by its owner (0600), replaced atomically on each write."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except (OSError, ValueError):
            return {"tokens": {}, "clients": {}}  # unreadable: start over rather than crash
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        data.setdefault("tokens", {})
        data.setdefault("clients", {})
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _get(self, table: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            item = self._load()[table].get(key)
        return item if isinstance(item, dict) else None

    def _set(self, table: str, key: str, item: dict[str, Any] | None) -> None:
        """Change one entry under the lock: read the file, change it, replace it."""
        with self._lock:
            data = self._load()
            _put(data[table], key, item)
            self._save(data)

    def get_tokens(self, resource: str) -> TokenSet | None:
        item = self._get("tokens", resource)
        return TokenSet.from_dict(item) if item is not None else None

    def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        self._set("tokens", resource, tokens.to_dict() if tokens is not None else None)

    def get_client(self, issuer: str) -> ClientInfo | None:
        item = self._get("clients", issuer)
        return ClientInfo.from_dict(item) if item is not None else None

    def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        self._set("clients", issuer, client.to_dict() if client is not None else None)


def _put(table: dict[str, V], key: str, value: V | None) -> None:
    """Set ``key`` in ``table``, or remove it when ``value`` is None (a store's rule)."""
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value
