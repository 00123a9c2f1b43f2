"""The local web page's backend: a small Starlette app over one :class:`~mcpkit.host.Host`.

Security, because a local web server is reachable from every page the browser opens
(DNS rebinding, CSRF; the MCP Inspector's CVE-2025-49596 was exactly this):

* it binds 127.0.0.1 only (see ``serve``), and checks the ``Host`` header against that;
* every request, the page included, needs the per-launch token (``secrets.token_urlsafe``),
  as ``Authorization: Bearer`` or, for the page and the event stream (which cannot set
  headers), ``?token=``; compared in constant time;
* a request carrying an ``Origin`` must come from the page's own origin;
* the page is sent with ``Referrer-Policy: no-referrer`` (the token is in its URL),
  ``frame-ancestors 'none'`` and ``no-store``, and a CSP that lets it talk to itself only
  and frame nothing but the sandbox proxy;
* MCP App views never run on this origin: they are served by the sandbox server on another
  port (:mod:`.sandbox`), with their CSP as a response header.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ...protocol.sse import KEEPALIVE_SECONDS
from ...types.errors import METHOD_NOT_FOUND, McpError
from ..apps import AppError
from ..config import ConfigError, parse_server
from ..connection import ServerUnavailable
from ..host import ToolCancelled, ToolDenied
from ..models.base import ModelError
from ..policy import Permission
from .state import NEW_TITLE, WebHost

__all__ = ["create_app"]

_PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
Handler = Callable[[Request], Awaitable[Response]]


_CHOICE_KEYS = frozenset({"target", "name", "permission"})


def _permission_choice(data: dict[str, Any]) -> tuple[str, str, Permission | None]:
    """(target, name, permission) of a permission chosen on the page; anything else
    (an unknown key, another target, a value that is not a permission) is a ValueError
    naming it."""
    unknown = sorted(set(data) - _CHOICE_KEYS)
    if unknown:
        raise ValueError(f"unknown permission setting {unknown[0]!r}")
    target, name, raw = data.get("target"), data.get("name"), data.get("permission")
    if target not in ("server", "tool"):
        raise ValueError("target must be 'server' or 'tool'")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a server's or a tool's name")
    if raw is None and target == "tool":
        return target, name, None
    if raw not in set(Permission):
        raise ValueError(f"permission must be allow, ask or deny, not {raw!r}")
    return target, name, Permission(str(raw))


def _view_ref(data: dict[str, Any]) -> tuple[str, str]:
    """(server, uri) of the view the page asks to open; a ValueError unless both are there
    and the uri is a ``ui://`` one."""
    server, uri = data.get("server"), data.get("uri")
    if isinstance(server, str) and server and isinstance(uri, str) and uri.startswith("ui://"):
        return server, uri
    raise ValueError("apps/open needs a server's name and a view's ui:// uri")


def _error(status: int, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def _failure(exc: Exception, **extra: object) -> JSONResponse:
    """The answer to a page request that failed with ``exc`` (``extra`` added to it): 403 a
    tool the person denied, 409 a cancelled one, 404 a server the host does not have, 503
    one that is not up (connecting, restarting, failed, not trusted yet), 400 a bad request
    or configuration, 504 a server that did not answer in time, 502 a server's error (its
    JSON-RPC code passed on) or a document that is not an App view."""
    if isinstance(exc, ToolDenied):
        return _error(403, str(exc), denied=True, **extra)
    if isinstance(exc, ToolCancelled):
        return _error(409, str(exc), cancelled=True, **extra)
    if isinstance(exc, ServerUnavailable):
        return _error(404 if exc.unknown else 503, str(exc), **extra)
    if isinstance(exc, McpError):
        return _error(502, exc.message, code=exc.code, **extra)
    if isinstance(exc, AppError):  # (a ValueError: the server's document, not the request)
        return _error(502, str(exc), **extra)
    if isinstance(exc, ConfigError | ModelError | ValueError):
        return _error(400, str(exc), **extra)
    if isinstance(exc, TimeoutError):
        return _error(504, str(exc), **extra)
    return _error(502, f"{type(exc).__name__}: {exc}", **extra)  # shown as it is


def create_app(web: WebHost) -> Starlette:
    host = web.host
    page = resources.files("mcpkit.host.web").joinpath("page.html").read_text("utf-8")

    def guarded(fn: Handler) -> Handler:
        async def wrapper(request: Request) -> Response:
            if web.allowed_hosts and request.headers.get("host") not in web.allowed_hosts:
                return _error(403, "unexpected Host header")
            origin = request.headers.get("origin")
            if origin is not None and f"{origin.split('://', 1)[-1]}" not in web.allowed_hosts:
                return _error(403, "cross-origin requests are not allowed")
            auth = request.headers.get("authorization", "")
            given = (
                auth[7:]
                if auth.lower().startswith("bearer ")
                else request.query_params.get("token", "")
            )
            if not secrets.compare_digest(given.encode(), web.token.encode()):
                return _error(401, "missing or wrong token (use the URL printed at launch)")
            try:
                return await fn(request)
            except Exception as exc:
                return _failure(exc)

        return wrapper

    async def body(request: Request) -> dict[str, Any]:
        try:
            data = await request.json()
        except ValueError:
            raise ValueError("the request body is not JSON") from None
        if not isinstance(data, dict):
            raise ValueError("the request body must be a JSON object")
        return data

    async def index(request: Request) -> Response:
        return HTMLResponse(
            page, headers={**_PAGE_HEADERS, "Content-Security-Policy": web.page_csp()}
        )

    async def state(request: Request) -> Response:
        return JSONResponse(
            {
                "servers": [
                    *(host.untrusted_status(n) for n in host.untrusted),
                    *(c.status() for c in host.servers.values()),
                ],
                "model": web.model.name if web.model else None,
                "prompts": web.interaction.questions(),
                "permissions": policy_state(),
            }
        )

    async def add_server(request: Request) -> Response:
        data = await body(request)
        config = parse_server(str(data.get("name", "")), data.get("config"))
        conn = await host.add_server(config)
        return JSONResponse(conn.status())

    async def server_action(request: Request) -> Response:
        name = request.path_params["name"]
        if request.url.path.endswith("/trust"):
            conn = await host.trust_server(name)
            return JSONResponse(conn.status())
        if request.url.path.endswith("/logout"):
            host.logout(name)
            return JSONResponse({"ok": True})
        if request.method == "DELETE":
            host.remove_server(name)
        else:
            host.connection(name).restart()
        return JSONResponse({"ok": True})

    async def tools(request: Request) -> Response:
        listed = await host.list_tools(refresh=request.query_params.get("refresh") == "1")
        return JSONResponse(
            [
                {
                    "name": t.qualified_name,
                    "server": t.server,
                    "tool": t.name,
                    "title": t.tool.get("title") or t.annotations.get("title"),
                    "description": t.description,
                    "inputSchema": t.schema,
                    "annotations": t.annotations,
                    "flags": list(t.flags),
                    "uiResourceUri": t.ui_resource_uri,
                    "forModel": t.for_model,
                    "permission": host.policy.permission(t.server, t.qualified_name),
                    "serverPermission": host.policy.server_permission(t.server),
                }
                for t in listed
            ]
        )

    async def call_tool(request: Request) -> Response:
        data = await body(request)
        name = data.get("name")
        origin = "app" if data.get("origin") == "app" else "user"
        if not isinstance(name, str):  # an app names its server's tool: resolve it
            server, tool, for_app = str(data.get("server")), str(data.get("tool")), origin == "app"
            found = host.qualified(server, tool, for_app=for_app)
            if found is None:
                await host.list_tools()
                found = host.qualified(server, tool, for_app=for_app)
            name = found or f"{server}__{tool}"
        arguments = data.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be an object")
        call_id = data.get("callId")
        result = await host.call_tool(
            name,
            arguments,
            origin=origin,
            app_server=data.get("server") if origin == "app" else None,
            call_id=f"page:{call_id}" if isinstance(call_id, str) else None,
        )
        return JSONResponse({"name": name, "result": result})

    async def cancel_call(request: Request) -> Response:
        """Cancel a running call: ``{"id": <callId>}`` from the Tools tab, or
        ``{"chat": <the model's call id>}`` for a call the model made."""
        data = await body(request)
        key = f"chat:{data['chat']}" if "chat" in data else f"page:{data.get('id')}"
        return JSONResponse({"cancelled": host.cancel_call(key)})

    async def list_resources(request: Request) -> Response:
        listed = await host.list_resources()
        templates = await host.list_resource_templates()
        return JSONResponse(
            {
                "resources": [{"server": s, **r} for s, r in listed],
                "templates": [{"server": s, **t} for s, t in templates],
            }
        )

    async def read_resource(request: Request) -> Response:
        data = await body(request)
        return JSONResponse(await host.read_resource(str(data["server"]), str(data["uri"])))

    async def list_prompts(request: Request) -> Response:
        return JSONResponse([{"server": s, **p} for s, p in await host.list_prompts()])

    async def get_prompt(request: Request) -> Response:
        data = await body(request)
        args = {str(k): str(v) for k, v in (data.get("arguments") or {}).items()}
        return JSONResponse(await host.get_prompt(str(data["server"]), str(data["name"]), args))

    async def complete_prompt(request: Request) -> Response:
        data = await body(request)
        raw = data.get("context")
        context: dict[str, Any] = raw if isinstance(raw, dict) else {}
        values = await host.complete_prompt_argument(
            str(data["server"]),
            str(data["prompt"]),
            str(data["argument"]),
            str(data.get("value") or ""),
            {str(k): str(v) for k, v in context.items() if v},
        )
        return JSONResponse({"values": values})

    async def open_app(request: Request) -> Response:
        data = await body(request)
        server, uri = _view_ref(data)
        try:
            doc = await host.read_app(server, uri)
        except Exception as exc:  # answered as any page request's, naming the view
            return _failure(exc, server=server, uri=uri)
        page_origin = f"http://{request.headers.get('host')}"
        return JSONResponse(
            {
                **doc.to_json(),
                "sandboxOrigin": web.sandbox.origin,
                "proxy": web.sandbox.proxy_url(page_origin),
                "view": web.sandbox.publish(server, doc),
            }
        )

    async def app_message(request: Request) -> Response:
        """``ui/message`` from a view: allowed by the server's permission (``ask``: the
        person confirms), answered at once, and the turn it starts runs after the answer
        (the spec: the host responds, then follows up)."""
        chat = web.chat
        if chat is None:
            return _error(400, "no model is configured, so there is no conversation")
        data = await body(request)
        server, role = str(data.get("server")), data.get("role", "user")
        if role not in ("user", "assistant"):
            raise ValueError("role must be user or assistant")
        raw = data.get("content")
        items = raw if isinstance(raw, list) else [raw]
        text = "\n".join(
            str(i.get("text")) for i in items if isinstance(i, dict) and i.get("type") == "text"
        )
        if not text:
            raise ValueError("ui/message needs text content")
        host.connection(server)  # a known server, or 404
        await host.authorize_app_message(server, role, text)

        async def follow_up() -> None:
            async with web.chat_lock:
                try:
                    await chat.app_message(server, role, text)
                except Exception as exc:  # shown in the transcript, like a failed send
                    host.emit("chat", {"kind": "error", "text": str(exc)})
                finally:
                    web.save()

        return JSONResponse({}, background=BackgroundTask(follow_up))

    async def app_open_link(request: Request) -> Response:
        """``ui/open-link`` from a view: the person is asked, shown the address, and the
        answer is audited; the page opens it only after a 200."""
        data = await body(request)
        url = str(data.get("url") or "")
        if not url.startswith(("http://", "https://")):
            raise ValueError("only http(s) links can be opened")
        server = str(data.get("server"))
        host.connection(server)  # a known server, or 404
        await host.authorize_open_link(server, url)
        return JSONResponse({"url": url})

    async def app_method(request: Request) -> Response:
        """A view calls a custom method of its server's declared extension (the bridge
        passes any method it does not handle itself): -32601 for one the server declares
        no extension for; the server's JSON-RPC error passed on with its code."""
        data = await body(request)
        server, method = str(data.get("server")), str(data.get("method") or "")
        params = data.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError("params must be an object")
        if host.extension_of(server, method) is None:
            return _error(404, f"Method not found: {method}", code=METHOD_NOT_FOUND)
        result = await host.call_extension_method(server, method, params)  # (errors: 502)
        return JSONResponse({"result": result})

    async def app_context(request: Request) -> Response:
        data = await body(request)
        if web.chat is not None:
            web.chat.set_app_context(
                str(data.get("view")), str(data.get("server")), str(data.get("uri")), data
            )
        return JSONResponse({})

    async def answer(request: Request) -> Response:
        data = await body(request)
        ok = web.interaction.answer(str(data.get("id")), data.get("answer"))
        return JSONResponse({"ok": ok}, status_code=200 if ok else 404)

    async def permissions(request: Request) -> Response:
        """A permission chosen on the page: ``{"target": "server" | "tool", "name",
        "permission": "allow" | "ask" | "deny"}`` (a tool's may be null: it follows its
        server).  Applied to the host's policy at once, kept for the next start, audited."""
        data = await body(request)
        target, name, permission = _permission_choice(data)
        if target == "server":
            if name not in host.servers and name not in host.untrusted:
                raise ValueError(f"no server named {name!r}")
            assert permission is not None  # _permission_choice: a server's is never null
            host.policy.choose_server(name, permission)
            server = name
        else:
            tool = host.tool(name)
            if tool is None:
                raise ValueError(f"no tool named {name!r} (see /api/tools)")
            host.policy.choose_tool(name, permission)
            server = tool.server
        if web.permissions is not None:
            web.permissions.save(target, name, permission)
        host.audit.record(
            "permission",
            server,
            name,
            origin="user",
            decision=str(permission or "as its server"),
            by="user",
        )
        return JSONResponse({"ok": True, "permissions": policy_state()})

    def policy_state() -> dict[str, Any]:
        """The permissions as the page shows them: the default, the config file's and the
        person's choices, by server and by tool."""
        policy = host.policy
        return {
            "default": policy.default,
            "servers": policy.servers,
            "tools": policy.tools,
            "chosenServers": policy.chosen_servers,
            "chosenTools": policy.chosen_tools,
        }

    async def chat(request: Request) -> Response:
        if web.chat is None:
            return _error(400, "no model is configured (see 'model' in the config file)")
        data = await body(request)
        async with web.chat_lock:
            if data.get("resource"):
                ref = data["resource"]
                await web.chat.attach_resource(str(ref["server"]), str(ref["uri"]))
            if data.get("prompt"):
                ref = data["prompt"]
                await web.chat.use_prompt(
                    str(ref["server"]), str(ref["name"]), ref.get("arguments") or {}
                )
            text = str(data.get("text") or "")
            if text:
                web.keep({"kind": "user", "text": text})
                title_from(text)
            try:
                reply = await web.chat.send(text)
            finally:
                web.save()
        return JSONResponse({"reply": reply})

    def title_from(text: str) -> None:
        """A new conversation is named after its first words."""
        store, current = web.store, web.current
        if store is None or current is None:
            return
        found = store.get(current)
        if found is not None and found["title"] == NEW_TITLE:
            store.rename(current, text if len(text) <= 60 else text[:57] + "...")

    async def get_settings(request: Request) -> Response:
        settings = web.settings
        if settings is None:
            return JSONResponse({"available": False})
        return JSONResponse(
            {"available": True, "active": web.model.name if web.model else None}
            | settings.describe()
        )

    async def save_settings(request: Request) -> Response:
        """The model chosen on the page: validated, built (a missing key is a 400), kept,
        and used from the next message on."""
        settings = web.settings
        if settings is None:
            raise ValueError("model settings are not available in this host")
        data = await body(request)
        key = data.pop("apiKey", None)
        if key is not None and not isinstance(key, str):
            raise ValueError("apiKey must be a string")
        model = settings.choose(data, key)
        async with web.chat_lock:
            web.use_model(model)
        return JSONResponse({"ok": True, "model": model.name})

    async def conversations(request: Request) -> Response:
        store = web.store
        return JSONResponse(
            {"current": web.current, "conversations": store.summaries() if store else []}
        )

    async def current_conversation(request: Request) -> Response:
        store, current = web.store, web.current
        found = store.get(current) if store and current else None
        if store is None or found is None:
            return JSONResponse({"id": None, "title": None, "events": []})
        return JSONResponse({**found, "events": store.events(found["id"])})

    async def new_conversation(request: Request) -> Response:
        store = web.store
        if store is None:
            raise ValueError("conversations are not kept in this host")
        async with web.chat_lock:
            created = store.create(NEW_TITLE)
            web.switch(created["id"])
        return JSONResponse(created)

    async def conversation_action(request: Request) -> Response:
        store = web.store
        if store is None:
            raise ValueError("conversations are not kept in this host")
        conversation = request.path_params["conversation"]
        if store.get(conversation) is None:
            return _error(404, "no such conversation")
        if request.method == "DELETE":
            async with web.chat_lock:
                store.delete(conversation)
                if web.current == conversation:
                    kept = store.summaries()
                    web.switch(kept[0]["id"] if kept else store.create(NEW_TITLE)["id"])
            return JSONResponse({"ok": True, "current": web.current})
        if request.url.path.endswith("/rename"):
            data = await body(request)
            store.rename(conversation, str(data.get("title") or ""))
            return JSONResponse({"ok": True})
        async with web.chat_lock:  # open
            web.switch(conversation)
        return JSONResponse({"ok": True, "current": conversation})

    async def app_log(request: Request) -> Response:
        data = await body(request)
        params = data.get("params")
        host.app_log(str(data.get("server")), params if isinstance(params, dict) else {})
        return JSONResponse({})

    async def logs(request: Request) -> Response:
        return JSONResponse(list(host.logs))

    async def audit(request: Request) -> Response:
        return JSONResponse([e.to_json() for e in host.audit.entries[-500:]])

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            async with host.events() as incoming:
                yield b": connected\n\n"
                while True:
                    with anyio.move_on_after(KEEPALIVE_SECONDS) as idle:
                        kind, data = await incoming.receive()
                    if idle.cancelled_caught:
                        yield b": keep-alive\n\n"
                        continue
                    payload = json.dumps(data, default=str)
                    yield f"event: {kind}\ndata: {payload}\n\n".encode()

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    # The page's API under /api/, by method; every route needs the page's token (guarded).
    reads = {
        "state": state,
        "tools": tools,
        "resources": list_resources,
        "prompts": list_prompts,
        "audit": audit,
        "logs": logs,
        "events": events,
        "conversations": conversations,
        "settings": get_settings,
        "conversations/current": current_conversation,
    }
    actions = {
        "servers": add_server,
        "servers/{name}/restart": server_action,
        "servers/{name}/trust": server_action,
        "servers/{name}/logout": server_action,
        "tools/call": call_tool,
        "calls/cancel": cancel_call,
        "resources/read": read_resource,
        "prompts/get": get_prompt,
        "prompts/complete": complete_prompt,
        "apps/open": open_app,
        "apps/message": app_message,
        "apps/open-link": app_open_link,
        "apps/method": app_method,
        "apps/context": app_context,
        "apps/log": app_log,
        "answer": answer,
        "permissions": permissions,
        "chat": chat,
        "conversations": new_conversation,
        "settings": save_settings,
        "conversations/{conversation}/open": conversation_action,
        "conversations/{conversation}/rename": conversation_action,
    }
    routes = [
        Route("/", guarded(index)),
        Route("/favicon.ico", no_icon),
        Route("/api/servers/{name}", guarded(server_action), methods=["DELETE"]),
        Route(
            "/api/conversations/{conversation}",
            guarded(conversation_action),
            methods=["DELETE"],
        ),
        *(Route(f"/api/{path}", guarded(handler)) for path, handler in reads.items()),
        *(
            Route(f"/api/{path}", guarded(handler), methods=["POST"])
            for path, handler in actions.items()
        ),
    ]
    return Starlette(routes=routes)
