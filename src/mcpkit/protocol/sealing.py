"""Sealing MRTR ``requestState``: authenticated encryption the client cannot read or forge.

A server that answers ``input_required`` hands the client an opaque ``requestState`` and
gets it back on the retry, possibly at another replica.  The state is attacker-controlled
input, so it is sealed with AES-256-GCM; the associated data binds it to the request it
belongs to (method + tool/prompt/resource name + principal), and the payload carries an
expiry.  Keys come from a :class:`Keyring` that several processes share (an environment
variable, a key file, or the state backend): never a random per-process key alone, which
would break the moment a retry lands on another replica.  The first key seals; every key
opens, which is how rotation works.

Token format: ``v1.<key id>.<base64url(nonce || ciphertext)>``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..types.codec import DecodeError, decode, encode

ENV_KEYS = "MCPKIT_SEALING_KEYS"
_VERSION = "v1"


class InvalidState(ValueError):
    """The state was tampered with, expired, sealed for another request, or unknown."""


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"mcpkit-key-id" + key).hexdigest()[:12]


def derive_key(secret: str | bytes) -> bytes:
    """A 256-bit key from any secret string (so operators can configure plain text)."""
    raw = secret.encode() if isinstance(secret, str) else secret
    return hashlib.sha256(b"mcpkit-sealing-v1" + raw).digest()


class Keyring:
    """Sealing keys, newest first.  Seal with the first, open with any."""

    __slots__ = ("_ciphers", "_keys", "primary_id")

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a keyring needs at least one key")
        for key in keys:
            if len(key) != 32:
                raise ValueError("sealing keys are 32 bytes (use derive_key for text secrets)")
        self._keys = {_key_id(k): k for k in keys}
        self.primary_id = _key_id(keys[0])
        self._ciphers: dict[str, Any] = {}

    @classmethod
    def from_secrets(cls, secrets_: Sequence[str]) -> Keyring:
        return cls([derive_key(s) for s in secrets_])

    @classmethod
    def from_env(cls) -> Keyring | None:
        """Keys from ``MCPKIT_SEALING_KEYS`` (comma separated secrets, newest first)."""
        raw = os.environ.get(ENV_KEYS, "").strip()
        if not raw:
            return None
        return cls.from_secrets([part.strip() for part in raw.split(",") if part.strip()])

    @classmethod
    def from_file(cls, path: str | Path) -> Keyring:
        """Keys from a file (one secret per line, newest first), created with a fresh key
        (mode 0600) when missing, so every process pointed at it shares the keys."""
        file = Path(path)
        if not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        lines = [ln.strip() for ln in file.read_text().splitlines() if ln.strip()]
        return cls.from_secrets(lines)

    def _cipher(self, kid: str) -> Any:
        cipher = self._ciphers.get(kid)
        if cipher is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            cipher = self._ciphers[kid] = AESGCM(self._keys[kid])
        return cipher

    def seal(self, payload: dict[str, Any], binding: str, ttl_s: float = 600.0) -> str:
        body = dict(payload)
        body["exp"] = int(time.time() + ttl_s)
        nonce = secrets.token_bytes(12)
        sealed = self._cipher(self.primary_id).encrypt(nonce, encode(body), binding.encode())
        token = base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode()
        return f"{_VERSION}.{self.primary_id}.{token}"

    def open(self, token: Any, binding: str) -> dict[str, Any]:
        if not isinstance(token, str):
            raise InvalidState("requestState must be a string")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise InvalidState("requestState is not one this server issued")
        kid, blob = parts[1], parts[2]
        if kid not in self._keys:
            raise InvalidState("requestState was sealed with an unknown key")
        try:
            raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        except (ValueError, TypeError):
            raise InvalidState("requestState is not valid base64") from None
        if len(raw) < 12 + 16:
            raise InvalidState("requestState is truncated")
        from cryptography.exceptions import InvalidTag

        try:
            plain = self._cipher(kid).decrypt(raw[:12], raw[12:], binding.encode())
        except InvalidTag:
            raise InvalidState(
                "requestState failed authentication (tampered or misdirected)"
            ) from None
        try:
            body = decode(plain)
        except DecodeError:
            raise InvalidState("requestState payload is corrupt") from None
        if not isinstance(body, dict) or not isinstance(body.get("exp"), int):
            raise InvalidState("requestState payload is corrupt")
        if body["exp"] < time.time():
            raise InvalidState("requestState has expired; start the request again")
        return body
