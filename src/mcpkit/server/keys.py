"""Sealing keys shared through the state backend, with rotation.

Every replica pointed at the same backend seals and opens MRTR ``requestState`` with the
same keys: the first process creates the key list (``add`` makes that race-free), later
ones read it.  :func:`rotate` puts a new key in front; older keys keep opening state
sealed before the rotation until they are dropped.
"""

from __future__ import annotations

import secrets

from ..protocol.sealing import Keyring
from ..state.base import StateBackend

KEYS = "sealing-keys"
MAX_KEYS = 3


async def load_shared_keyring(backend: StateBackend) -> Keyring:
    fresh = [secrets.token_urlsafe(32)]
    await backend.add(KEYS, _encode(fresh))
    raw = await backend.get(KEYS)
    secrets_list = _decode(raw) if raw else fresh
    return Keyring.from_secrets(secrets_list)


async def rotate(backend: StateBackend) -> Keyring:
    """Add a new primary key (keeping the last ``MAX_KEYS``); returns the new keyring."""
    new_key = secrets.token_urlsafe(32)

    def change(old: object) -> object:
        current = old if isinstance(old, list) else []
        return [new_key, *current][:MAX_KEYS]

    keys = await backend.update_json(KEYS, change)
    return Keyring.from_secrets(list(keys))


def _encode(keys: list[str]) -> bytes:
    from ..types.codec import encode

    return encode(keys)


def _decode(raw: bytes) -> list[str]:
    from ..types.codec import decode

    value = decode(raw)
    return [str(k) for k in value] if isinstance(value, list) else []
