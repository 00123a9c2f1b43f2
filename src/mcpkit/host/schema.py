"""The host's JSON file as a typed schema: the common ``mcpServers`` entry keys the client
layer reads (:mod:`mcpkit.client.config`), the host's own keys next to them, and the
host's top-level sections; nothing else.

:func:`check` runs before the file is built into a :class:`~.config.HostConfig`, and
:func:`check_server` on a server added at run time: an unknown key is an error naming its
path (``mcpServers.files.envFile``) with the closest known key, instead of a setting
silently ignored (a server started without the environment it was meant to have).  The
schema checks shapes and types; what a value means is checked where it is built.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from pydantic.functional_validators import BeforeValidator

from ..types.strict import check_document

__all__ = ["HostFile", "check", "check_server"]


def _scalar(value: object) -> object:
    if isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError("must be a string")


def _model_spec(value: object) -> object:
    if isinstance(value, str):  # "anthropic:claude-sonnet-4-5"
        provider, _, model = value.partition(":")
        return {"provider": provider, "model": model}
    return value


def _options_or_switch(value: object) -> object:
    return None if isinstance(value, bool) else value


#: A header, environment or argument value: written as text (numbers and booleans too).
Scalar = Annotated[str | int | float | bool, BeforeValidator(_scalar)]


class _Object(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


class OAuthOptions(_Object):
    """A server's ``oauth`` object (pre-registration and the callback port)."""

    client_id: StrictStr | None = Field(None, alias="clientId")
    client_secret: StrictStr | None = Field(None, alias="clientSecret")
    callback_port: int | None = Field(None, alias="callbackPort")
    scopes: list[StrictStr] | None = None


class ServerEntry(_Object):
    """One ``mcpServers`` entry: how to reach the server, and the host's rules for it."""

    type: StrictStr | None = None
    transport: StrictStr | None = None
    command: StrictStr | None = None
    args: list[Scalar] | None = None
    env: dict[str, Scalar] | None = None
    cwd: StrictStr | None = None
    url: StrictStr | None = None
    server_url: StrictStr | None = Field(None, alias="serverUrl")
    headers: dict[str, Scalar] | None = None
    timeout: float | None = None
    era: StrictStr | None = None
    disabled: StrictBool | None = None
    permission: StrictStr | None = None
    tools: dict[str, StrictStr] | None = None
    #: ``true``/``false`` (on demand / off) or the options object.
    oauth: Annotated[OAuthOptions | None, BeforeValidator(_options_or_switch)] = None


class Permissions(_Object):
    default: StrictStr | None = None
    servers: dict[str, StrictStr] | None = None
    tools: dict[str, StrictStr] | None = None


class ModelSection(_Object):
    provider: StrictStr | None = None
    model: StrictStr | None = None
    base_url: StrictStr | None = Field(None, alias="baseUrl")
    base_url_snake: StrictStr | None = Field(None, alias="base_url")
    api_key_env: StrictStr | None = Field(None, alias="apiKeyEnv")
    api_key_env_snake: StrictStr | None = Field(None, alias="api_key_env")
    max_tokens: int | None = Field(None, alias="maxTokens")
    max_tokens_snake: int | None = Field(None, alias="max_tokens")
    system: StrictStr | None = None
    script: list[Any] | None = None


class Root(_Object):
    uri: StrictStr
    name: StrictStr | None = None


class HostFile(_Object):
    """The whole file (``servers`` is the spelling some hosts use for ``mcpServers``)."""

    mcp_servers: dict[str, ServerEntry] | None = Field(None, alias="mcpServers")
    servers: dict[str, ServerEntry] | None = None
    permissions: Permissions | None = None
    model: Annotated[ModelSection, BeforeValidator(_model_spec)] | None = None
    roots: list[Root] | None = None
    audit_log: StrictStr | None = Field(None, alias="auditLog")
    tool_search: StrictBool | int | None = Field(None, alias="toolSearch")
    max_tool_output_tokens: int | None = Field(None, alias="maxToolOutputTokens")


class _OneServer(_Object):
    mcp_servers: dict[str, ServerEntry] = Field(alias="mcpServers")


def check(data: object) -> None:
    """Raise a :class:`~mcpkit.types.errors.ConfigError` naming every unknown or mistyped
    key of a host file."""
    check_document(HostFile, data)


def check_server(name: str, item: object) -> None:
    """The same for one server entry (one added at run time), named as in a file."""
    check_document(_OneServer, {"mcpServers": {name: item}})
