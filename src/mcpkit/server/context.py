"""The per-request Context handed to tools, resources and prompts that ask for it.

Everything a handler may do towards the client goes through here, identically on both
eras: progress, logging, and input requests (elicitation, sampling, roots).  The
transport-specific part lives behind :class:`~mcpkit.runtime.exchange.Exchange`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..protocol.negotiation import RequestMeta, client_has
from ..runtime.exchange import Exchange
from ..types.errors import invalid_params, missing_capability
from ..types.jsonrpc import RequestId
from ..types.methods import INPUT_REQUEST_CAPABILITY, METHODS
from ..types.versions import LOG_LEVEL_RANK, Era
from .mrtr import InputRound, NeedInput
from .request import RequestInfo

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ..runtime.legacy_session import LegacySession
    from .elicitation import Accepted, Cancelled, Declined
    from .handles import Handles
    from .server import Server
    from .task_handle import TaskHandle
    from .url_elicitation import UrlElicitation, UrlSpec

__all__ = ["Context"]

T = TypeVar("T")


class Context:
    """What a handler knows about its request and how it talks back to the client."""

    __slots__ = (
        "_exception",
        "_last_progress",
        "_request",
        "_round",
        "_task",
        "exchange",
        "meta",
        "method",
        "params",
        "principal",
        "request_id",
        "server",
        "session",
    )

    _request: RequestInfo
    _exception: BaseException | None

    def __init__(
        self,
        server: Server,
        meta: RequestMeta,
        request_id: RequestId | None,
        exchange: Exchange,
        *,
        method: str = "",
        params: dict[str, Any] | None = None,
        session: LegacySession | None = None,
        input_round: InputRound | None = None,
        principal: Any = None,
    ) -> None:
        self.server = server
        self.meta = meta
        self.request_id = request_id
        self.exchange = exchange
        self.method = method
        self.params = params or {}
        self.session = session
        self.principal = principal
        self._round = input_round
        self._last_progress: float | None = None
        self._task: TaskHandle | None = None

    # ----- facts about the request
    # ``_request`` and ``_exception`` are left unset until used (reading an unset slot
    # raises AttributeError): two stores fewer for every request that never asks.
    @property
    def exception(self) -> BaseException | None:
        """The exception a tool raised that became its ``isError`` result (not a
        ``ToolError``, whose text is meant for the model): for middleware such as error
        masking, which must not let its text reach the client."""
        try:
            return self._exception
        except AttributeError:
            return None

    @exception.setter
    def exception(self, value: BaseException | None) -> None:
        self._exception = value

    @property
    def request(self) -> RequestInfo:
        """The request's HTTP headers (empty on stdio), client info and capabilities,
        era, protocol version and id (built on first use)."""
        try:
            return self._request
        except AttributeError:
            meta = self.meta
            info = self._request = RequestInfo(
                self.exchange.headers,
                meta.era,
                meta.protocol_version,
                meta.client_info,
                meta.client_capabilities,
                self.request_id,
                self.method,
                self.principal,
            )
        return info

    @property
    def protocol_version(self) -> str:
        return self.meta.protocol_version

    @property
    def era(self) -> Era:
        return self.meta.era

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.meta.client_capabilities

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.meta.client_info

    def client_supports(self, capability: str) -> bool:
        """Dotted capability check, e.g. ``ctx.client_supports("elicitation.url")``."""
        return client_has(self.meta.client_capabilities, capability)

    @property
    def state(self) -> dict[str, Any]:
        """Handler data carried (sealed) across MRTR rounds on the modern era."""
        if self._round is None:
            self._round = InputRound()
        return self._round.state

    # ----- notifications
    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for it (``progressToken``).

        Progress must increase; a value not above the last one is dropped, not sent.
        """
        token = self.meta.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.exchange.notify("notifications/progress", params)

    async def log(self, level: str, data: object, logger: str | None = None) -> None:
        """``notifications/message`` at ``level`` if the client's level lets it through.

        Modern: only when the request carried a log level.  Legacy: the session's
        ``logging/setLevel`` level (nothing before one is set, like the reference SDKs do
        not: we default to sending nothing).
        """
        threshold = self.meta.log_level
        if self.session is not None and threshold is None:
            threshold = self.session.log_level
        if threshold is None or LOG_LEVEL_RANK.get(level, 0) < LOG_LEVEL_RANK[threshold]:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.exchange.notify("notifications/message", params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send an extension's notification ``method`` to the client, on this request's
        stream (as progress and log messages go).  MCP's own notifications have their own
        calls (``log``, ``report_progress``, the change notices): naming one is a ValueError."""
        if method in METHODS:
            raise ValueError(f"{method!r} is a notification of MCP itself, not an extension's")
        await self.exchange.notify(method, dict(params or {}))

    async def debug(self, data: object, logger: str | None = None) -> None:
        """Send a ``debug`` log message to the client (see :meth:`log`)."""
        await self.log("debug", data, logger)

    async def info(self, data: object, logger: str | None = None) -> None:
        """Send an ``info`` log message to the client (see :meth:`log`)."""
        await self.log("info", data, logger)

    async def warning(self, data: object, logger: str | None = None) -> None:
        """Send a ``warning`` log message to the client (see :meth:`log`)."""
        await self.log("warning", data, logger)

    async def error(self, data: object, logger: str | None = None) -> None:
        """Send an ``error`` log message to the client (see :meth:`log`)."""
        await self.log("error", data, logger)

    # ----- input requests
    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any] | None = None,
        *,
        key: str | None = None,
    ) -> dict[str, Any]: ...

    @overload
    async def elicit(
        self, message: str, requested_schema: type[T], *, key: str | None = None
    ) -> Accepted[T] | Declined | Cancelled: ...

    @overload
    async def elicit(
        self, message: str, requested_schema: Any, *, key: str | None = None
    ) -> Any: ...

    async def elicit(
        self, message: str, requested_schema: Any = None, *, key: str | None = None
    ) -> Any:
        """Ask the user for structured input (form mode).

        With a JSON schema (or none) the answer is the ``ElicitResult`` dict
        (``{"action": "accept"|"decline"|"cancel", "content": {...}}``).  With a type (a
        pydantic model, dataclass, TypedDict, ``Literal`` of strings, string ``Enum`` or
        a scalar) the schema is built from it and the answer is :class:`Accepted` (with
        ``.data`` of that type), :class:`Declined` or :class:`Cancelled`; see
        :mod:`mcpkit.server.elicitation` for what a type may contain."""
        typed = requested_schema is not None and not isinstance(requested_schema, dict)
        wrapped = False
        schema = requested_schema
        if typed:  # typed elicitation: its module only when a type is given (cold starts)
            from .elicitation import elicitation_schema

            schema, wrapped = elicitation_schema(requested_schema)
        params: dict[str, Any] = {
            "mode": "form",
            "message": message,
            "requestedSchema": schema or {"type": "object", "properties": {}},
        }
        if self.meta.era == "legacy" and self.meta.protocol_version < "2025-11-25":
            params.pop("mode")
        answer = await self._ask_one(
            "elicitation/create", params, "elicitation.form", key or "elicit"
        )
        if not typed:
            return answer
        from .elicitation import outcome

        return outcome(requested_schema, wrapped, answer)

    def url_elicitation(
        self, message: str, url: UrlSpec, elicitation_id: str | None = None
    ) -> UrlElicitation:
        """A URL elicitation not yet asked: ``raise handle.required()`` to fail the call
        with ``-32042`` (2025-11-25; an input round on 2026-07-28), keep the handle, and
        ``await handle.complete()`` when the page reports back.  ``url`` may be a
        function of the elicitation id (the page needs it to name what it completes).
        Refused with ``-32021`` when the client did not declare ``elicitation.url``."""
        from .url_elicitation import UrlElicitation, new_elicitation_id, url_params

        eid = elicitation_id or new_elicitation_id()
        target = url(eid) if callable(url) else url
        # Servers must not ask for URL elicitation (the error included) unless declared.
        spec = {"method": "elicitation/create", "params": url_params(message, target, eid)}
        self._require("elicitation/create", "elicitation.url", spec)
        legacy = self.exchange if self.meta.era == "legacy" else None
        return UrlElicitation(eid, message, target, None, self.server.state, legacy)

    async def elicit_url(
        self,
        message: str,
        url: UrlSpec,
        elicitation_id: str | None = None,
        *,
        key: str | None = None,
    ) -> UrlElicitation:
        """Send the user to a URL (URL mode; for secrets, sign-ins and third-party
        consent) and return the :class:`~mcpkit.server.url_elicitation.UrlElicitation`:
        its ``action`` is the user's answer (``accept`` = they agreed to go), and the
        server calls ``await handle.complete()`` when the page reports back (2025-11-25:
        the client gets ``notifications/elicitation/complete``).  On 2026-07-28 the id
        is kept across rounds and a retried round's ``handle.completed`` says whether the
        page has reported back by then.  ``url`` may be a function of the id."""
        from .url_elicitation import (
            UrlElicitation,
            is_url_elicitation_complete,
            new_elicitation_id,
            url_params,
        )

        modern = self.meta.era == "modern"
        if modern and key is None:
            key = self._modern_round().next_key("elicit")
        ids: dict[str, str] = self.state.setdefault("url-elicitations", {}) if modern else {}
        eid = ids.get(key or "") or elicitation_id or new_elicitation_id()
        if modern:
            ids[key or ""] = eid
        target = url(eid) if callable(url) else url
        params = url_params(message, target, None if modern else eid)
        answer = await self._ask_one(
            "elicitation/create", params, "elicitation.url", key or "elicit"
        )
        action = answer.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise invalid_params(f"URL elicitation answered with an unknown action {action!r}")
        state = self.server.state
        done = modern and await is_url_elicitation_complete(state, eid)
        exchange = None if modern else self.exchange
        return UrlElicitation(eid, message, target, action, state, exchange, completed=done)

    async def sample(
        self,
        messages: list[dict[str, Any]] | str,
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        tools: Iterable[str | Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        key: str | None = None,
        **extra: object,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``).

        ``tools`` (names of this server's tools, or ``Tool`` objects) and ``tool_choice``
        (``"auto"``, ``"required"``, ``"none"`` or a ``ToolChoice``) let the model ask for
        tool calls; they need the client's ``sampling.tools`` capability (-32021
        otherwise).  :mod:`mcpkit.server.sampling` reads the answer's ``tool_use`` blocks
        and builds the ``tool_result`` message of the next round."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **extra}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if tools is not None or tool_choice is not None:
            from .sampling import sampling_tools
            from .sampling import tool_choice as choice_param

            if tools is not None:
                params["tools"] = sampling_tools(self.server, tools)
            if tool_choice is not None:
                params["toolChoice"] = choice_param(tool_choice)
        needed = "sampling.tools" if "tools" in params or "toolChoice" in params else "sampling"
        return await self._ask_one("sampling/createMessage", params, needed, key or "sample")

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``)."""
        result = await self._ask_one("roots/list", {}, "roots", key or "roots")
        roots = result.get("roots", [])
        return roots if isinstance(roots, list) else []

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Several input requests at once, keyed by your own names.

        ``requests`` maps a key to ``{"method": ..., "params": ...}``; the answer maps the
        same keys to the client's results.  Modern: one round with all of them.  Legacy:
        sent to the client one after another.
        """
        for spec in requests.values():
            self._require(spec["method"], INPUT_REQUEST_CAPABILITY.get(spec["method"], ""), spec)
        if self._task is not None and self._task.started:
            answers = await self._task.ask(requests)
            return {k: _checked_answer(k, v) for k, v in answers.items()}
        if self.meta.era == "legacy":
            answers = {}
            for key, spec in requests.items():
                answers[key] = await self.exchange.request(spec["method"], spec.get("params", {}))
            return answers
        known = self._modern_round()
        missing = {k: v for k, v in requests.items() if k not in known.responses}
        if missing:
            raise NeedInput(missing)
        return {k: _checked_answer(k, known.responses[k]) for k in requests}

    async def _ask_one(
        self, method: str, params: dict[str, Any], capability: str, key: str
    ) -> dict[str, Any]:
        """One input request.  ``key`` names it in ``inputRequests``; a built-in prefix
        (``elicit``/``sample``/``roots``) gets a per-call counter so repeated asks differ."""
        self._require(method, capability, {"method": method, "params": params})
        in_task = self._task is not None and self._task.started
        if self.meta.era == "legacy" and not in_task:
            return await self.exchange.request(method, params)
        known = self._modern_round()
        if key in ("elicit", "sample", "roots"):
            key = known.next_key(key)
        if in_task:
            assert self._task is not None
            answers = await self._task.ask({key: {"method": method, "params": params}})
            return _checked_answer(key, answers[key])
        if key in known.responses:
            return _checked_answer(key, known.responses[key])
        raise NeedInput({key: {"method": method, "params": params}})

    def _modern_round(self) -> InputRound:
        if self._round is None:
            self._round = InputRound()
        return self._round

    def _require(self, method: str, capability: str, spec: dict[str, Any]) -> None:
        if not capability or client_has(self.meta.client_capabilities, capability):
            return
        required: dict[str, Any] = {}
        node = required
        parts = capability.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = {}
        raise missing_capability(required, f"{method} needs the client capability {capability}")

    # ----- this server's own resources and prompts
    async def read_resource(self, uri: str) -> dict[str, Any]:
        """Read one of this server's resources as a client of this request would: through
        dispatch and the middleware, so what a middleware hides or refuses fails the
        same way here.  Returns the ``ReadResourceResult`` (``result["contents"]``)."""
        return await self._own("resources/read", {"uri": uri})

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Render one of this server's prompts (``GetPromptResult``), through the
        middleware like :meth:`read_resource`."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self._own("prompts/get", params)

    async def _own(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": self.request_id, "method": method, "params": params}
        return await self.server.dispatch(
            message, self.meta, self.exchange, session=self.session, principal=self.principal
        )

    # ----- tasks and handles
    async def start_task(self) -> None:
        """Tools registered with ``task_start="manual"``: accept the work as a task now.

        Input asked before this point is gathered synchronously (MRTR); the client gets
        the CreateTaskResult here and the rest of the tool runs in the background.  A
        no-op when the call is not running as a task.
        """
        if self._task is not None:
            await self._task.start()

    @property
    def task_id(self) -> str | None:
        return self._task.task_id if self._task is not None and self._task.started else None

    @property
    def handles(self) -> Handles:
        """Mint and resolve opaque, expiring handles bound to this caller (see
        :class:`mcpkit.server.handles.Handles`)."""
        from .handles import Handles

        return Handles(self.server.state, self.principal)

    # ----- misc
    async def close_sse_stream(self, retry_ms: int | None = None) -> None:
        """Legacy HTTP: close this request's SSE stream so the client polls/resumes it."""
        await self.exchange.close_stream(retry_ms)


def _checked_answer(key: str, answer: object) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise invalid_params(f"inputResponses[{key!r}] must be an object")
    return answer
