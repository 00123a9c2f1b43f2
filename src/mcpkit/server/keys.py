"""Sealing keys shared through the state backend, with rotation; or a private key file.

Every replica pointed at the same backend seals and opens MRTR ``requestState`` with the
same keys: the first process creates the key list (``add`` makes that race-free), later
ones read it.  :func:`rotate` puts a new key in front; older keys keep opening state
sealed before the rotation until they are dropped.

A server whose state is in memory (and without ``MCPKIT_SEALING_KEYS``) reads its keys
from a file in its per-user data directory (:func:`default_key_file`), shared by every
process of that server run by that user.  The file is created readable by its user
alone, and refused (:class:`InsecureKeyFile`) when another user owns it or anyone else
may read or write it: whoever reads the keys can forge request state.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from ..protocol.sealing import Keyring
from ..state.base import StateBackend, StateLocationError, default_state_dir, make_private_dirs

KEYS = "sealing-keys"
MAX_KEYS = 3
KEY_FILE = "sealing.key"


class InsecureKeyFile(PermissionError):
    """A sealing key file another user owns, or that group or others may read or write."""


def default_key_file(server_name: str) -> Path:
    """The key file of a server whose state is in memory (an absolute path)."""
    return default_state_dir(server_name) / KEY_FILE


def load_key_file(path: Path) -> Keyring:
    """Keys from ``path`` (one secret per line, newest first), created with a fresh key
    when missing.  Raises :class:`InsecureKeyFile` for a file that is not private, and
    :class:`~mcpkit.state.base.StateLocationError` when it cannot be created or read."""
    path = Path(os.path.abspath(path))
    try:
        if not path.exists():
            _create_key_file(path)
        check_key_file(path)
        return Keyring.from_file(path)  # (it exists: only read)
    except (InsecureKeyFile, StateLocationError):
        raise
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise StateLocationError(f"cannot use the sealing key file {path}: {why}") from None
    except ValueError:  # an empty file
        raise StateLocationError(f"the sealing key file {path} holds no key") from None


def check_key_file(path: Path) -> None:
    """Refuse (:class:`InsecureKeyFile`, one line naming the file and the fix) a key file
    owned by another user or open to group or others (POSIX; nothing to check elsewhere)."""
    if os.name != "posix":
        return
    info = os.stat(path)
    if info.st_uid != os.geteuid():
        raise InsecureKeyFile(
            f"refusing the sealing key file {path}: it belongs to uid {info.st_uid}, "
            f"not to this user (uid {os.geteuid()})"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise InsecureKeyFile(
            f"refusing the sealing key file {path}: group or others can read or write it "
            f"(mode {mode:04o}; chmod 600 {path})"
        )


def _create_key_file(path: Path) -> None:
    """A fresh key at ``path`` (0600, folders 0700), written whole before it appears under
    its name (a hard link, which fails if another process was first: its key wins)."""
    make_private_dirs(path.parent)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


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
