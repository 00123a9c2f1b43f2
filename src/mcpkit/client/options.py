"""Client settings, and the per-server memory of which protocol era a server speaks.

Defaults are chosen so that a client "just works" against any server and never hangs:
every request has a timeout (60 s) that progress notifications may extend up to a hard
maximum (10 min); a stdio server gets 30 s to answer its first request.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shlex
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast

from ..runtime.contracts import ServedServer
from ..transports.client_base import ClientTransport
from ..transports.client_stdio import StderrMode, StdioTransport
from ..types.versions import LEGACY_VERSIONS, MODERN_VERSIONS, Era, EraChoice
from .cache import ResultCache
from .era import sse_fallback_allowed
from .models import Implementation

if TYPE_CHECKING:
    import httpx

TraceContextProvider = Callable[[], Mapping[str, str]]


@functools.cache
def default_client_info() -> Implementation:
    try:
        from importlib.metadata import version

        ours = version("mcpkit")
    except Exception:  # not installed as a distribution (e.g. a source checkout)
        ours = "0"
    return {"name": "mcpkit-client", "version": ours}


@dataclass(slots=True)
class ProtocolOptions:
    """Who the client says it is and which protocol revisions it may speak."""

    #: ``clientInfo`` / ``_meta["io.modelcontextprotocol/clientInfo"]``.
    client_info: Implementation = field(default_factory=default_client_info)
    #: ``"auto"`` probes with ``server/discover`` and falls back to ``initialize``.
    era: EraChoice = "auto"
    #: Modern revisions we may use, preferred first.
    protocol_versions: tuple[str, ...] = MODERN_VERSIONS
    #: Legacy revisions we accept from ``initialize``, preferred (requested) first.
    legacy_versions: tuple[str, ...] = LEGACY_VERSIONS
    #: On the modern era, call ``server/discover`` when connecting (capabilities, info).
    discover: bool = True
    #: Where the era of each server is remembered (None: the process-wide one).
    era_cache: EraCache | None = None
    #: Merged into the client capabilities derived from the callbacks (e.g. extensions).
    extra_capabilities: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TimeoutOptions:
    """How long the client waits, so that it never hangs."""

    #: Seconds per request without an answer (None: wait forever).  Progress restarts it.
    timeout: float | None = 60.0
    #: Progress never extends a request beyond this many seconds.
    max_timeout: float | None = 600.0
    #: The first exchange (probe and/or handshake) must finish within this many seconds.
    startup_timeout: float = 30.0
    #: How long ``server/discover`` may take before the server is taken for a legacy one.
    probe_timeout: float = 10.0


@dataclass(slots=True)
class HttpClientOptions:
    """Streamable HTTP (and HTTP+SSE) settings; ignored by the other transports."""

    #: Extra HTTP headers on every request (e.g. ``Authorization``).
    headers: dict[str, str] = field(default_factory=dict)
    #: An ``httpx.Auth`` for every request (e.g. :class:`mcpkit.auth.OAuth`).
    auth: httpx.Auth | None = None
    #: Use this ``httpx.AsyncClient`` (not closed by the client).
    http_client: httpx.AsyncClient | None = None
    #: Legacy sessions: open the standalone GET stream for server-initiated messages.
    legacy_get_stream: bool = True
    #: Speak the 2024-11-05 HTTP+SSE transport to a URL straight away (GET for the
    #: ``endpoint`` event, then POSTs); without it a URL is tried as Streamable HTTP first
    #: and falls back to HTTP+SSE when ``initialize`` is refused with 400/404/405.
    sse: bool = False


@dataclass(slots=True)
class ProcessOptions:
    """How a stdio server process is started and stopped; ignored by the other transports.
    Each field is the :class:`~mcpkit.transports.client_stdio.StdioTransport` keyword
    argument of the same name, with the same default."""

    #: Environment for a stdio server, on top of ours (see ``inherit_env``).
    env: Mapping[str, str] | None = None
    #: Start from this process's environment (False: only ``env``).
    inherit_env: bool = True
    #: The server's working directory (None: ours).
    cwd: str | os.PathLike[str] | None = None
    #: ``"capture"`` (keep the tail for errors, log at DEBUG), ``"inherit"`` or a callable
    #: receiving each line.
    stderr: StderrMode = "capture"
    #: Seconds between closing stdin, SIGTERM and SIGKILL on shutdown.
    shutdown_grace: float = 2.0


@dataclass(slots=True)
class FeatureOptions:
    """What the client does on top of plain requests: caching, tasks, input rounds, logs,
    tracing."""

    #: Bound on multi round-trip (``input_required``) rounds per request.
    max_input_rounds: int = 8
    #: Ask the server for log messages at this level and above (``on_log`` receives them).
    log_level: str | None = None
    #: W3C trace context for each request's ``_meta`` (``traceparent``, ``tracestate``,
    #: ``baggage``).  None: taken from OpenTelemetry's global propagator when installed.
    trace_context: TraceContextProvider | None = None
    #: OpenTelemetry CLIENT spans and ``mcp.client.operation.duration`` per request (needs
    #: the ``otel`` extra).  None: as the process default (``mcpkit ... --otel`` sets it).
    telemetry: bool | None = None
    #: Cache list results and resource contents per their ``ttlMs``/``cacheScope``.
    #: True: a cache of this client's own; or share a :class:`ResultCache`; False: none.
    cache: bool | ResultCache = True
    #: Declare the tasks extension: ``tools/call`` may then come back as a task (followed
    #: to its result by ``call_tool``; ``start_tool_task`` hands you the task itself).
    tasks: bool = False


class ClientSettings(TypedDict, total=False):
    """The keyword arguments of ``Client(...)``, ``ClientOptions.of`` and
    :meth:`ClientOptions.replace`: every field of every option group, by name (a test
    keeps this list equal to the groups' fields)."""

    client_info: Implementation
    era: EraChoice
    protocol_versions: tuple[str, ...]
    legacy_versions: tuple[str, ...]
    discover: bool
    era_cache: EraCache | None
    extra_capabilities: dict[str, Any]
    timeout: float | None
    max_timeout: float | None
    startup_timeout: float
    probe_timeout: float
    headers: dict[str, str]
    auth: httpx.Auth | None
    http_client: httpx.AsyncClient | None
    legacy_get_stream: bool
    sse: bool
    env: Mapping[str, str] | None
    inherit_env: bool
    cwd: str | os.PathLike[str] | None
    stderr: StderrMode
    shutdown_grace: float
    max_input_rounds: int
    log_level: str | None
    trace_context: TraceContextProvider | None
    telemetry: bool | None
    cache: bool | ResultCache
    tasks: bool


@dataclass(slots=True)
class ClientOptions:
    """How a :class:`~mcpkit.client.Client` talks to its server, in focused groups.

    Users rarely build one: every field of every group can be passed to ``Client(...)``
    (and ``Client.from_config``) as a keyword argument of the same name, which
    :meth:`replace` sorts into its group; ``ClientOptions.of(timeout=5)`` does the same.
    """

    protocol: ProtocolOptions = field(default_factory=ProtocolOptions)
    timeouts: TimeoutOptions = field(default_factory=TimeoutOptions)
    http: HttpClientOptions = field(default_factory=HttpClientOptions)
    process: ProcessOptions = field(default_factory=ProcessOptions)
    features: FeatureOptions = field(default_factory=FeatureOptions)

    @classmethod
    def of(cls, **settings: Unpack[ClientSettings]) -> ClientOptions:
        """Defaults changed by field name (``timeout=5``, ``headers={...}``)."""
        return cls().replace(**settings)

    def replace(self, **settings: Unpack[ClientSettings]) -> ClientOptions:
        """A copy with fields changed by name, whichever group holds them (the keyword
        arguments of ``Client(...)``); an unknown name raises :class:`TypeError`."""
        changes: dict[str, dict[str, Any]] = {}
        for name, value in settings.items():
            group = _group_of().get(name)
            if group is None:
                raise TypeError(f"unknown client option {name!r}")
            changes.setdefault(group, {})[name] = value
        groups = {g: dataclasses.replace(getattr(self, g), **c) for g, c in changes.items()}
        return dataclasses.replace(self, **groups)


@functools.cache
def _group_of() -> dict[str, str]:
    """Which group holds each field name (read off the dataclasses, never listed by hand)."""
    hints = typing.get_type_hints(ClientOptions)
    return {
        member.name: group.name
        for group in dataclasses.fields(ClientOptions)
        for member in dataclasses.fields(hints[group.name])
    }


class EraCache:
    """Which era (and version) each server spoke, so the next connection skips the probe.

    Keyed by the transport's ``server_key`` (command line for stdio, origin + path for
    HTTP).  An entry that stops working is forgotten and the server probed again.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Era, str]] = {}

    def get(self, key: str) -> tuple[Era, str] | None:
        """The era and version remembered for a server, or None."""
        return self._entries.get(key)

    def remember(self, key: str, era: Era, version: str) -> None:
        """Remember the era and version a server spoke, so the next connection skips the probe."""
        self._entries[key] = (era, version)

    def forget(self, key: str) -> None:
        """Forget a server's era (it stopped answering in it); the next connection probes again."""
        self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget every server."""
        self._entries.clear()


#: The process-wide era memory used when ``ClientOptions.era_cache`` is None.
DEFAULT_ERA_CACHE = EraCache()


_MODULE_PATH = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


def serve_command(target: str) -> list[str] | None:
    """The ``mcpkit serve`` command for a target that names a server file or module.

    ``demo.py``, ``path/to/demo.py:server`` and ``pkg.mod:app`` (the forms ``mcpkit serve``
    takes) are launched as ``python -m mcpkit serve TARGET`` with this interpreter, so a
    file that only *defines* a server works as a target, as users of other frameworks
    expect of ``Client("server.py")``.  Anything else (a URL, a command line with spaces, a
    bare program name) is not a server target: None.
    """
    if not target or any(ch.isspace() for ch in target):
        return None
    windows_drive = len(target) > 2 and target[1] == ":" and target[2] in "\\/"
    spec, _, name = (target, "", "") if windows_drive else target.partition(":")
    if spec.endswith(".py") or (
        name and _MODULE_PATH.fullmatch(spec) is not None and name.isidentifier()
    ):
        return [sys.executable, "-m", "mcpkit", "serve", target]
    return None


def transport_for(
    target: str | Sequence[str] | ClientTransport | ServedServer, options: ClientOptions
) -> ClientTransport:
    """An ``http(s)://`` URL -> Streamable HTTP; a server file or module
    (:func:`serve_command`), a command line or an argv -> stdio; a ``Server`` object -> in
    memory."""
    # --- in-memory: a Server object, recognised by shape (client/ must not
    # import server/), served in this event loop over the stdio code path.
    if is_served_server(target):
        from ..transports.memory import MemoryTransport

        return MemoryTransport(cast(ServedServer, target))
    # --- end in-memory
    http = options.http
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            if http.sse:  # HTTP+SSE (2024-11-05), asked for explicitly ("type": "sse")
                return _sse_transport(target, http)
            from ..transports.client_http import HttpTransport  # httpx only when needed

            return HttpTransport(
                target,
                headers=http.headers,
                auth=http.auth,
                http_client=http.http_client,
                legacy_get_stream=http.legacy_get_stream,
            )
        command = serve_command(target) or shlex.split(target, posix=os.name != "nt")
    elif isinstance(target, Sequence):
        command = [str(part) for part in target]
    else:
        return cast(ClientTransport, target)
    if not command:
        raise ValueError("empty server command")
    return StdioTransport(command, **_transport_arguments(options.process))


def _transport_arguments(process: ProcessOptions) -> dict[str, Any]:
    """The process options as :class:`StdioTransport`'s keyword arguments: each field is one
    of them, by the same name (tests/client/test_client_api.py holds the two together)."""
    return {option.name: getattr(process, option.name) for option in dataclasses.fields(process)}


def _sse_transport(url: str, http: HttpClientOptions) -> ClientTransport:
    from ..transports.client_sse import SseTransport

    return SseTransport(url, headers=http.headers, auth=http.auth, http_client=http.http_client)


def is_served_server(target: object) -> bool:
    """A server object (``mcpkit.Server`` or anything serving like it), not a transport."""
    return (
        callable(getattr(target, "dispatch", None))
        and callable(getattr(target, "running", None))
        and not hasattr(target, "set_handlers")
    )


#: POST statuses after which a URL is retried as a 2024-11-05 HTTP+SSE server.
SSE_FALLBACK_STATUSES = frozenset({400, 404, 405})


def legacy_sse_fallback(
    transport: ClientTransport, refused: Exception, options: ClientOptions
) -> ClientTransport | None:
    """The HTTP+SSE transport to try after a Streamable HTTP ``initialize`` was refused
    with ``refused`` (2025-03-26 backwards compatibility: a 4xx to the POST, then GET the
    same URL expecting an ``endpoint`` event), or None when that does not apply."""
    from ..transports.client_base import HttpStatusError
    from ..transports.client_http import HttpTransport

    if (
        not sse_fallback_allowed(options.protocol.era)
        or not isinstance(transport, HttpTransport)
        or not isinstance(refused, HttpStatusError)
        or refused.status not in SSE_FALLBACK_STATUSES
    ):
        return None
    return _sse_transport(transport.url, options.http)
