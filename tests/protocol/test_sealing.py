"""MRTR requestState sealing: protocol/sealing.Keyring."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from mcpkit.protocol.sealing import ENV_KEYS, InvalidState, Keyring, derive_key

BINDING = "tools/call\0confirm\0"


@pytest.fixture
def ring() -> Keyring:
    return Keyring.from_secrets(["primary-secret"])


def test_round_trip_keeps_the_payload(ring: Keyring) -> None:
    payload = {"r": {"k": {"action": "accept", "content": {"n": "é"}}}, "s": {"count": 2}}
    token = ring.seal(payload, BINDING)
    assert isinstance(token, str) and token.startswith("v1." + ring.primary_id + ".")
    opened = ring.open(token, BINDING)
    assert opened["r"] == payload["r"] and opened["s"] == payload["s"]
    assert isinstance(opened["exp"], int)


def test_tokens_are_opaque_and_never_repeat(ring: Keyring) -> None:
    a = ring.seal({"secret": "hunter2"}, BINDING)
    b = ring.seal({"secret": "hunter2"}, BINDING)
    assert a != b  # fresh nonce each time
    assert "hunter2" not in a
    blob = a.split(".")[2]
    assert b"hunter2" not in base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))


def _flip(token: str, index: int) -> str:
    head, kid, blob = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4)))
    raw[index] ^= 0x01
    return f"{head}.{kid}." + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


@pytest.mark.parametrize("index", [0, 11, 12, 20, -1])  # nonce, ciphertext, tag
def test_any_flipped_bit_is_detected(ring: Keyring, index: int) -> None:
    token = ring.seal({"r": {}}, BINDING)
    with pytest.raises(InvalidState):
        ring.open(_flip(token, index), BINDING)


def test_state_sealed_for_another_request_does_not_open(ring: Keyring) -> None:
    token = ring.seal({"r": {}}, BINDING)
    for other in ("tools/call\0other\0", "prompts/get\0confirm\0", BINDING + "alice", ""):
        with pytest.raises(InvalidState):
            ring.open(token, other)


def test_expired_state_is_refused(ring: Keyring) -> None:
    token = ring.seal({"r": {}}, BINDING, ttl_s=-5)
    with pytest.raises(InvalidState, match="expired"):
        ring.open(token, BINDING)
    assert ring.open(ring.seal({"r": {}}, BINDING, ttl_s=60), BINDING)["r"] == {}


@pytest.mark.parametrize(
    "token",
    [None, 1, {"a": 1}, "", "garbage", "v1.abc", "v2.x.y", "v1.a.b.c", "v1.unknownkeyid.AAAA"],
)
def test_malformed_tokens_are_refused(ring: Keyring, token: object) -> None:
    with pytest.raises(InvalidState):
        ring.open(token, BINDING)


def test_truncated_and_non_base64_blobs(ring: Keyring) -> None:
    kid = ring.primary_id
    for blob in ("", "AAAA", "!!!!", "A" * 30):
        with pytest.raises(InvalidState):
            ring.open(f"v1.{kid}.{blob}", BINDING)


def test_rotation_new_first_key_still_opens_old_tokens() -> None:
    old = Keyring.from_secrets(["old-secret"])
    token = old.seal({"r": {"a": 1}}, BINDING)
    rotated = Keyring.from_secrets(["new-secret", "old-secret"])
    assert rotated.primary_id != old.primary_id
    assert rotated.open(token, BINDING)["r"] == {"a": 1}
    # new tokens are sealed with the new key...
    fresh = rotated.seal({"r": {}}, BINDING)
    assert fresh.split(".")[1] == Keyring.from_secrets(["new-secret"]).primary_id
    # ...which the old ring cannot open, and the old key, once retired, opens nothing
    with pytest.raises(InvalidState):
        old.open(fresh, BINDING)
    with pytest.raises(InvalidState):
        Keyring.from_secrets(["new-secret"]).open(token, BINDING)


def test_same_secret_means_same_key_across_rings() -> None:
    token = Keyring.from_secrets(["shared"]).seal({"r": {}}, BINDING)
    assert Keyring.from_secrets(["shared"]).open(token, BINDING)["r"] == {}
    with pytest.raises(InvalidState):
        Keyring.from_secrets(["different"]).open(token, BINDING)


def test_from_file_creates_a_private_key_file_shared_by_every_ring(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "sealing.key"
    first = Keyring.from_file(path)
    assert path.exists()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    second = Keyring.from_file(path)
    assert first.primary_id == second.primary_id
    token = first.seal({"r": {"x": 1}}, BINDING)
    assert second.open(token, BINDING)["r"] == {"x": 1}
    # a rotation written into the file (new key first) keeps old tokens valid
    path.write_text("brand-new-secret\n" + path.read_text())
    third = Keyring.from_file(path)
    assert third.primary_id != first.primary_id
    assert third.open(token, BINDING)["r"] == {"x": 1}


def test_from_file_in_another_directory_is_another_key(tmp_path: Path) -> None:
    a = Keyring.from_file(tmp_path / "a.key")
    b = Keyring.from_file(tmp_path / "b.key")
    with pytest.raises(InvalidState):
        b.open(a.seal({}, BINDING), BINDING)


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_KEYS, raising=False)
    assert Keyring.from_env() is None
    monkeypatch.setenv(ENV_KEYS, " newest , older ,")
    ring = Keyring.from_env()
    assert ring is not None
    assert ring.primary_id == Keyring.from_secrets(["newest"]).primary_id
    token = Keyring.from_secrets(["older"]).seal({}, BINDING)
    assert ring.open(token, BINDING)["exp"] > 0


def test_key_validation() -> None:
    with pytest.raises(ValueError):
        Keyring([])
    with pytest.raises(ValueError):
        Keyring([b"short"])
    assert len(derive_key("x")) == 32 and derive_key("x") == derive_key(b"x")
    assert derive_key("x") != derive_key("y")
    assert Keyring([os.urandom(32)]).primary_id
