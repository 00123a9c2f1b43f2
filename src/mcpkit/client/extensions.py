"""What the client does for extensions: any request with a typed result
(``client.request(..., result_type=...)``), notifications routed by method
(``client.on_notification``), and the Skills extension's reads (``list_skills``,
``get_skill``)."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

from .callbacks import call_maybe_async
from .errors import ClientError, InvalidResultError, error_boundary
from .inbound import InboundHandling
from .typed import typed_result

if TYPE_CHECKING:
    from .session import RequestOptions, Session
    from .tasks import Task

log = logging.getLogger("mcpkit.client")
T = TypeVar("T")

#: A handler of one notification method (``Client.on_notification``): gets its params.
MethodNotificationHandler = Callable[[dict[str, Any]], Awaitable[None] | None]
#: Sees every notification (``Client.tap_notifications``): gets its method and params.
NotificationTap = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class ExtensionCalls(InboundHandling):
    """The extension part of :class:`~mcpkit.client.Client`."""

    _notification_handlers: dict[str, list[MethodNotificationHandler]]
    _notification_taps: list[NotificationTap]
    #: The task handles still held, by task id (for ``notifications/tasks/status``).
    _live_tasks: weakref.WeakValueDictionary[str, Task]
    session: Session
    #: ``Client._paginate``: every page of a list method.
    _paginate: Callable[[str, str, bool], Awaitable[list[Any]]]

    @overload
    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        result_type: None = None,
        **options: Unpack[RequestOptions],
    ) -> dict[str, Any]: ...
    @overload
    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        result_type: type[T],
        **options: Unpack[RequestOptions],
    ) -> T: ...
    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        result_type: type[Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> Any:
        """Any request, raw (no MRTR loop, no cache): an extension's custom method, or the
        escape hatch for a built-in one.  ``result_type`` (a TypedDict, dataclass or
        pydantic model) validates the result into that type (:class:`InvalidResultError`
        otherwise); without it the result is the plain JSON object.  The options are
        :class:`~mcpkit.client.session.RequestOptions`; ``headers`` are extra HTTP headers
        (e.g. ``Mcp-Param-*`` a proxy computed itself)."""
        with error_boundary():
            wire = await self.session.request(
                method, None if params is None else dict(params), **options
            )
        return wire if result_type is None else typed_result(method, wire, result_type)

    async def list_skills(self, *, refresh: bool = False) -> list[dict[str, Any]]:
        """Every skill the server publishes (Skills extension, ``skills/list``, all pages):
        ``Skill`` entries (``uri`` of the ``SKILL.md``, ``frontmatter``, ``resources``
        with digests).  Read a skill's files with :meth:`read_resource`."""
        return await self._paginate("skills/list", "skills", refresh)

    async def get_skill(self, name_or_uri: str) -> dict[str, Any]:
        """One skill's entry (``skills/get``), by the URI of its ``SKILL.md`` or by its
        name (looked up in :meth:`list_skills`; a ``ClientError`` when no skill or more
        than one has that name)."""
        uri = name_or_uri
        if "://" not in name_or_uri:
            named = [
                s["uri"]
                for s in await self.list_skills()
                if isinstance(s, dict) and (s.get("frontmatter") or {}).get("name") == name_or_uri
            ]
            if len(named) != 1:
                found = "no skill" if not named else f"{len(named)} skills ({', '.join(named)})"
                raise ClientError(f"{found} named {name_or_uri!r}: give the SKILL.md URI")
            uri = named[0]
        result = await self.request("skills/get", {"uri": uri})
        skill = result.get("skill")
        if not isinstance(skill, dict):
            raise InvalidResultError("skills/get: the result has no 'skill' object")
        return skill

    def _init_extension_state(self) -> None:
        self._notification_handlers = {}
        self._notification_taps = []
        self._live_tasks = weakref.WeakValueDictionary()

    def _held(self, task: Task) -> Task:
        """``task``, its handle given the task's status notifications from now on."""
        self._live_tasks[task.id] = task
        return task

    def tap_notifications(self, tap: NotificationTap) -> None:
        """Call ``tap(method, params)`` for every notification the server sends, after
        the handlers of its method: for a relay that passes some on (the gateway, an
        upstream's extension notifications to the caller whose request they belong to).
        A tap runs where the notification is read: for one read on a request's own stream
        (Streamable HTTP), inside that request's task."""
        self._notification_taps.append(tap)

    def _task_status(self, params: object) -> None:
        """Hand a task's status notification to its handle, if one is held."""
        if isinstance(params, dict):
            task = self._live_tasks.get(str(params.get("taskId")))
            if task is not None:
                task.observe(params)

    def on_notification(self, method: str, handler: MethodNotificationHandler | None = None) -> Any:
        """Call ``handler(params)`` for each notification ``method`` the server sends (an
        extension's, or a built-in one), besides the ``on_notification=`` callback.  Use it
        as a call or as a decorator (``@client.on_notification("com.example/x/changed")``)."""

        def register(fn: MethodNotificationHandler) -> MethodNotificationHandler:
            self._notification_handlers.setdefault(method, []).append(fn)
            return fn

        return register if handler is None else register(handler)

    async def _on_notification(self, message: dict[str, Any]) -> None:
        await super()._on_notification(message)
        if message["method"] == "notifications/tasks/status":
            self._task_status(message.get("params"))
        for handler in self._notification_handlers.get(message["method"], ()):
            params = message.get("params")
            try:
                await call_maybe_async(handler, params if isinstance(params, dict) else {})
            except Exception:  # a handler's bug must not break the connection
                log.exception("notification handler for %s failed", message["method"])
        for tap in self._notification_taps:
            params = message.get("params")
            try:
                await call_maybe_async(
                    tap, message["method"], params if isinstance(params, dict) else {}
                )
            except Exception:
                log.exception("notification tap failed for %s", message["method"])
