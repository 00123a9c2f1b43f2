"""The web page as the host's :class:`~mcpkit.host.Interaction`: questions go out as events,
answers come back through ``POST /api/answer``.

Each question gets an id and waits (up to ``timeout``) for the page to answer it; a
question nobody answers is declined, never approved.  Pending questions are kept so a page
opened (or reloaded) later still shows them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio

from ..host import Interaction
from ..policy import ConsentDecision, ConsentRequest

__all__ = ["WebInteraction"]


class _Question:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.done = anyio.Event()
        self.answer: Any = None


class WebInteraction(Interaction):
    def __init__(self, emit: Callable[[str, dict[str, Any]], None], timeout: float = 600.0) -> None:
        self._emit = emit
        self.timeout = timeout
        self._ids = itertools.count(1)
        self.pending: dict[str, _Question] = {}
        self.closed = False

    def close(self) -> None:
        """The host is stopping: every pending question, and any asked from now on, is
        answered with nothing (declined)."""
        self.closed = True
        for question in list(self.pending.values()):
            question.done.set()

    async def _ask(self, kind: str, data: dict[str, Any]) -> Any:
        if self.closed:
            return None
        qid = f"q{next(self._ids)}"
        question = _Question({"id": qid, "kind": kind, **data})
        self.pending[qid] = question
        self._emit("prompt", question.data)
        try:
            with anyio.move_on_after(self.timeout):
                await question.done.wait()
        finally:
            self.pending.pop(qid, None)
            self._emit("prompt_done", {"id": qid})
        return question.answer

    def answer(self, qid: str, answer: object) -> bool:
        question = self.pending.get(qid)
        if question is None or question.done.is_set():
            return False
        question.answer = answer
        question.done.set()
        return True

    def questions(self) -> list[dict[str, Any]]:
        return [q.data for q in self.pending.values()]

    async def consent(self, request: ConsentRequest) -> ConsentDecision:
        answer = await self._ask(
            "consent",
            {
                "server": request.server,
                "tool": request.tool,
                "name": request.qualified_name,
                "arguments": request.arguments,
                "origin": request.origin,
                "description": request.description,
                "annotations": request.annotations,
                "flags": list(request.flags),
            },
        )
        if not isinstance(answer, dict):
            return ConsentDecision(False, reason="nobody answered")
        return ConsentDecision(bool(answer.get("approved")), remember=bool(answer.get("remember")))

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self._ask(
            "elicit",
            {
                "server": server,
                "message": params.get("message"),
                "schema": params.get("requestedSchema") or {},
            },
        )
        return _elicit_answer(answer)

    async def elicit_url(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self._ask(
            "elicit_url",
            {"server": server, "message": params.get("message"), "url": params.get("url")},
        )
        return {"action": _elicit_answer(answer)["action"]}  # URL mode: consent, no content

    async def approve_sampling(self, server: str, params: dict[str, Any]) -> bool:
        answer = await self._ask(
            "sampling",
            {
                "server": server,
                "messages": params.get("messages"),
                "systemPrompt": params.get("systemPrompt"),
            },
        )
        return isinstance(answer, dict) and bool(answer.get("approved"))


def _elicit_answer(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
        return {"action": "cancel"}
    out: dict[str, Any] = {"action": answer["action"]}
    if answer["action"] == "accept" and isinstance(answer.get("content"), dict):
        out["content"] = answer["content"]
    return out
