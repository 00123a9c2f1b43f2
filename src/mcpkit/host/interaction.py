"""How the host reaches the person, and how it answers what servers ask of it.

:class:`Interaction` is the host's one door to the person (consent, forms, URLs, sampling
approval, log-in links); :class:`ServerRequests` is the part of :class:`~mcpkit.host.Host`
that answers servers' own requests (sampling, elicitation, roots, log messages) through that
door, each recorded in the audit trail.  Kept apart from ``host.py`` so the host's tool-call
path reads on its own.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..client import InputRequestError
from ..protocol.naming import exposed_name
from .config import HostConfig
from .policy import AuditTrail, ConsentDecision, ConsentRequest, Permission, Policy

__all__ = ["Interaction", "SamplingModel", "ServerRequests", "ToolCancelled", "ToolDenied"]

log = logging.getLogger("mcpkit.host")


class ToolDenied(Exception):
    """The policy or the person refused a tool call; the server never saw it."""

    def __init__(self, qualified_name: str, reason: str) -> None:
        super().__init__(f"{qualified_name}: {reason}")
        self.qualified_name = qualified_name
        self.reason = reason


class ToolCancelled(Exception):
    """A person cancelled the call while it ran (:meth:`Host.cancel_call`); the server was
    told (``notifications/cancelled``, or its HTTP stream closed on 2026-07-28)."""

    def __init__(self, qualified_name: str) -> None:
        super().__init__(f"{qualified_name}: cancelled by the user")
        self.qualified_name = qualified_name


class Interaction:
    """How the host reaches the person.  Override what your UI can ask."""

    async def consent(self, request: ConsentRequest) -> ConsentDecision | bool:
        """Ask the person to approve a tool call. By default no one is there: refused."""
        return ConsentDecision(False, reason="no one is there to approve it")

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the person for the form ``server`` requests. By default: declined."""
        return {"action": "decline"}

    async def elicit_url(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the person to open the URL ``server`` requests. By default: declined."""
        return {"action": "decline"}

    async def approve_sampling(self, server: str, params: dict[str, Any]) -> bool:
        """Ask the person whether ``server`` may use the model for this request. By default: no."""
        return False

    def login_url(self, server: str, url: str) -> None:
        """``server`` needs the person to log in at ``url`` (OAuth); show it to them."""
        log.warning("server %s needs you to log in: open %s", server, url)


#: Answers a sampling request with a model (set by whoever configures one).
SamplingModel = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class ServerRequests:
    """Answers to what a server asks of the host (mixed into :class:`~mcpkit.host.Host`)."""

    config: HostConfig
    interaction: Interaction
    policy: Policy
    audit: AuditTrail
    sampler: SamplingModel | None
    logs: collections.deque[dict[str, Any]]

    def emit(self, kind: str, data: Mapping[str, Any]) -> None:
        """Send one event to the host's subscribers (:meth:`Host.emit`)."""
        raise NotImplementedError

    async def _sample(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """A server wants the model: only with the person's approval, and only with the
        messages the server itself sent (never the host's conversation)."""
        if self.sampler is None:
            raise InputRequestError("this host has no model for sampling", missing=True)
        if not await self.interaction.approve_sampling(server, params):
            self.audit.record(
                "sampling",
                server,
                "sampling/createMessage",
                origin="server",
                decision="declined",
                by="user",
            )
            raise InputRequestError("the user declined the sampling request")
        self.audit.record(
            "sampling",
            server,
            "sampling/createMessage",
            origin="server",
            decision="approved",
            by="user",
        )
        return await self.sampler(self._allowed_sampling_tools(server, params))

    def _allowed_sampling_tools(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the tools it offers (sampling with tools) cut to those the host's
        policy does not deny for ``server``: a denied tool is never shown to the model."""
        tools = params.get("tools")
        if not isinstance(tools, list):
            return params
        allowed = [
            tool
            for tool in tools
            if isinstance(tool, dict)
            and self.policy.permission(server, exposed_name(server, str(tool.get("name"))))
            is not Permission.DENY
        ]
        return {**params, "tools": allowed}

    async def _elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._recorded_answer(server, "form", await self.interaction.elicit(server, params))

    async def _elicit_url(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """A URL elicitation (``elicitation/create`` in URL mode, or one page of a
        ``-32042`` answer): the person is shown the link; once they accept, the host shows
        that it waits for the page to report back (``url_elicitation`` events, ``waiting``
        then ``completed``), and the call goes on when it does."""
        answer = self._recorded_answer(
            server, "url", await self.interaction.elicit_url(server, params)
        )
        if answer.get("action") == "accept":
            self.emit(
                "url_elicitation",
                {
                    "server": server,
                    "state": "waiting",
                    "url": params.get("url"),
                    "message": params.get("message"),
                    "elicitationId": params.get("elicitationId"),
                },
            )
        return answer

    def _url_completed(self, server: str, elicitation_id: str) -> None:
        """``server`` says the page of URL elicitation ``elicitation_id`` is done."""
        self.audit.record(
            "elicitation",
            server,
            "url",
            origin="server",
            decision="completed",
            by="server",
            arguments={"elicitationId": elicitation_id},
        )
        self.emit(
            "url_elicitation",
            {"server": server, "state": "completed", "elicitationId": elicitation_id},
        )

    def _recorded_answer(self, server: str, mode: str, answer: dict[str, Any]) -> dict[str, Any]:
        """The person's answer to an elicitation, recorded in the audit trail."""
        self.audit.record(
            "elicitation",
            server,
            mode,
            origin="server",
            decision=str(answer.get("action")),
            by="user",
        )
        return answer

    async def _roots(self, server: str) -> list[dict[str, Any]]:
        self.audit.record(
            "roots", server, "roots/list", origin="server", decision="answered", by="policy"
        )
        return [dict(r) for r in self.config.roots]

    def _server_log(self, server: str, params: dict[str, Any]) -> None:
        entry = {"time": time.time(), "server": server, "from": "server", **params}
        self.logs.append(entry)
        self.emit("log", entry)

    def app_log(self, server: str, params: Mapping[str, Any]) -> None:
        """A ``notifications/message`` from one of ``server``'s app views: logged with the
        server's own messages, marked as the app's."""
        entry = {
            "time": time.time(),
            "server": server,
            "from": "app",
            "level": str(params.get("level") or "info"),
            "logger": params.get("logger"),
            "data": params.get("data"),
        }
        self.logs.append(entry)
        self.emit("log", entry)
