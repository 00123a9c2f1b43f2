"""What a person chooses on the page's settings, kept for the next start: the model and
its API key, and permissions per server and per tool.

The choices (provider, model name, base URL, the scripted model's steps; ``permissions``
by server and by tool) are a small JSON file, ``$MCPKIT_HOST_SETTINGS`` or
``$XDG_CONFIG_HOME/mcpkit/host-settings.json``, written 0600.  The key never goes there:
it is kept in the operating system's keyring (the ``keyring`` library: macOS Keychain,
Windows Credential Locker, the Secret Service on Linux) when one works, else in a file of
its own next to the settings, 0600 (``host-keys.json``).  ``MCPKIT_KEYRING=off`` skips the
keyring.  A model named in the host config file (or on the command line) takes precedence
over these settings; a permission chosen here takes precedence over the config file's
(see :mod:`.policy`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from .config import ConfigError, ModelConfig, parse_config, user_file
from .models.base import Model
from .policy import Permission, Policy

__all__ = ["KeyStore", "ModelSettings", "PermissionSettings", "build_model"]

log = logging.getLogger("mcpkit.host.settings")

_SERVICE = "mcpkit-host"


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """``data`` as JSON in ``path``, 0600, replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=1))
    tmp.replace(path)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class KeyStore:
    """API keys by provider: the OS keyring when one works, else a 0600 file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or user_file("MCPKIT_HOST_KEYS", "host-keys.json")
        self._keyring = None if os.environ.get("MCPKIT_KEYRING") == "off" else _working_keyring()

    @property
    def where(self) -> str:
        return "the system keyring" if self._keyring is not None else f"the file {self.path}"

    def get(self, provider: str) -> str | None:
        if self._keyring is not None:
            found = self._keyring.get_password(_SERVICE, provider)
            return str(found) if found else None
        value = _read(self.path).get(provider)
        return value if isinstance(value, str) and value else None

    def set(self, provider: str, key: str) -> None:
        if self._keyring is not None:
            self._keyring.set_password(_SERVICE, provider, key)
            return
        data = _read(self.path)
        data[provider] = key
        _write_private(self.path, data)


def _working_keyring() -> Any:
    """The keyring module when its backend can store secrets; None without one (a headless
    Linux without a Secret Service has only the "fail" backend)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken backend configuration: fall back to the file
        return None
    return None if isinstance(backend, fail.Keyring) else keyring


class ModelSettings:
    """The model chosen on the page (see the module)."""

    def __init__(self, path: Path | None = None, keys: KeyStore | None = None) -> None:
        self.path = path or user_file("MCPKIT_HOST_SETTINGS", "host-settings.json")
        self.keys = keys or KeyStore(self.path.with_name("host-keys.json"))

    def load(self) -> ModelConfig | None:
        """The saved choice, or None (nothing saved, or a file that is not valid)."""
        raw = _read(self.path).get("model")
        if raw is None:
            return None
        try:
            return parse_config({"mcpServers": {}, "model": raw}).model
        except ConfigError as exc:
            log.warning("ignoring the saved model settings (%s): %s", self.path, exc)
            return None

    def describe(self) -> dict[str, Any]:
        """What the page shows: the choice and whether a key is kept, never the key."""
        config = self.load()
        provider = config.provider if config else None
        return {
            "provider": provider,
            "model": config.model if config else "",
            "baseUrl": config.base_url if config else None,
            "script": list(config.script) if config else [],
            "hasKey": bool(provider and self.keys.get(provider)),
            "keyStorage": self.keys.where,
        }

    def choose(self, raw: dict[str, Any], api_key: str | None) -> Model:
        """A choice from the page (``provider``, ``model``, ``baseUrl``, ``script``; an
        unknown key is an error naming it): the model is built first, and only a choice
        that builds is kept, with ``api_key`` (when given) replacing the provider's key."""
        unknown = set(raw) - {"provider", "model", "baseUrl", "script"}
        if unknown:
            raise ConfigError(f"unknown model setting {sorted(unknown)[0]!r}")
        chosen = {k: v for k, v in raw.items() if v not in (None, "")}
        config = parse_config({"mcpServers": {}, "model": chosen}).model
        if config is None:
            raise ConfigError("choose a model provider")
        model = build_model(config, api_key or self.keys.get(config.provider))
        if api_key:
            self.keys.set(config.provider, api_key)
        _write_private(self.path, {**_read(self.path), "model": chosen})
        return model

    def build(self, config: ModelConfig) -> Model:
        return build_model(config, self.keys.get(config.provider))


class PermissionSettings:
    """Permissions chosen on the page, by server and by tool (``server__tool``; None: the
    tool follows its server), kept in the settings file next to the model."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or user_file("MCPKIT_HOST_SETTINGS", "host-settings.json")

    def load(self) -> tuple[dict[str, Permission], dict[str, Permission | None]]:
        """(servers, tools) as saved; an entry that is not a permission is left out, with a
        warning naming it."""
        raw = _read(self.path).get("permissions")
        saved = raw if isinstance(raw, dict) else {}
        servers, tools = saved.get("servers"), saved.get("tools")
        return (
            {
                k: p
                for k, p in _permissions(servers, "servers", self.path).items()
                if isinstance(p, Permission)
            },
            _permissions(tools, "tools", self.path),
        )

    def apply(self, policy: Policy) -> None:
        """Put the saved choices into ``policy`` (over the config file's permissions)."""
        servers, tools = self.load()
        for server, permission in servers.items():
            policy.choose_server(server, permission)
        for tool, chosen in tools.items():
            policy.choose_tool(tool, chosen)

    def save(self, target: str, name: str, permission: Permission | None) -> None:
        """Keep one choice: ``target`` is ``server`` or ``tool``."""
        data = _read(self.path)
        kept = data.get("permissions")
        saved: dict[str, Any] = kept if isinstance(kept, dict) else {}
        section = dict(saved.get(f"{target}s") or {})
        section[name] = None if permission is None else str(permission)
        _write_private(self.path, {**data, "permissions": {**saved, f"{target}s": section}})


def _permissions(raw: Any, section: str, path: Path) -> dict[str, Permission | None]:
    """A saved ``permissions.servers`` or ``.tools`` map; bad entries left out, named."""
    found: dict[str, Permission | None] = {}
    for name, value in (raw if isinstance(raw, dict) else {}).items():
        if value is None and section == "tools":
            found[str(name)] = None
            continue
        try:
            found[str(name)] = Permission(str(value))
        except ValueError:
            log.warning("ignoring the saved permission %s.%s (%s): %r", section, name, path, value)
    return found


def build_model(config: ModelConfig, api_key: str | None) -> Model:
    """The adapter for ``config`` with ``api_key`` (an OpenAI-compatible local server may
    need none; Anthropic does)."""
    if config.provider == "scripted":
        from .models.scripted import ScriptedModel

        return ScriptedModel.from_config(list(config.script))
    if config.provider == "anthropic":
        from .models.anthropic import AnthropicModel

        if not api_key:
            raise ConfigError("Anthropic needs an API key")
        return AnthropicModel(
            config.model or AnthropicModel.default_model,
            api_key=api_key,
            base_url=config.base_url,
            max_tokens=config.max_tokens,
        )
    from .models.openai import OpenAIModel

    return OpenAIModel(
        config.model or OpenAIModel.default_model,
        api_key=api_key or "none",
        base_url=config.base_url,
        max_tokens=config.max_tokens,
    )
