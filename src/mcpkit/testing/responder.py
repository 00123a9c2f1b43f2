"""A scripted user and model: answers a server's input requests from a list, in order.

Tests of tools that ask for input (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``)
need a client that answers the way a person or a model would.  :class:`ScriptedResponder`
gives each kind of request its own queue of answers and records every request, so a test
can assert both what the tool did with the answers and what it asked.  The same responder
works on both eras: MRTR rounds (2026-07-28) and server->client requests (legacy) reach the
same client callbacks.

A request with no answer left fails the call (the server sees a refused input request)
and is kept in :attr:`ScriptedResponder.unanswered`; :meth:`assert_done` raises if any
request went unanswered or any answer was never used, so a script that no longer matches
the tool's questions fails loudly instead of passing by accident.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..client.errors import InputRequestError

#: One scripted answer: a result dict, or a function of the request params returning one.
#: Elicitation: ``{"action": ...}`` as is, any other dict is accepted content.  Sampling:
#: a ``str`` becomes a text message from model ``"scripted"``.
Answer = Mapping[str, Any] | str | Callable[[dict[str, Any]], Any]


class ScriptedResponder:
    """``Client(server, **ScriptedResponder(elicitation=[{"name": "Ada"}]).callbacks())``."""

    def __init__(
        self,
        *,
        elicitation: Iterable[Answer] = (),
        url_elicitation: Iterable[Answer] = (),
        sampling: Iterable[Answer] = (),
        roots: Iterable[Mapping[str, Any]] | None = None,
    ) -> None:
        self._queues: dict[str, deque[Answer]] = {
            "elicitation": deque(elicitation),
            "url_elicitation": deque(url_elicitation),
            "sampling": deque(sampling),
        }
        self._declared = {kind for kind, queue in self._queues.items() if queue}
        self.roots = [dict(root) for root in roots] if roots is not None else None
        #: Every request received, in order: ``(kind, params)``.
        self.requests: list[tuple[str, dict[str, Any]]] = []
        #: Requests that found no answer left in their queue.
        self.unanswered: list[tuple[str, dict[str, Any]]] = []

    def callbacks(self) -> dict[str, Any]:
        """Keyword arguments for ``Client(...)``: one callback per scripted kind, so the
        client declares exactly the capabilities the script can honour."""
        out: dict[str, Any] = {}
        if "elicitation" in self._declared:
            out["elicitation"] = self.elicit
        if "url_elicitation" in self._declared:
            out["url_elicitation"] = self.elicit_url
        if "sampling" in self._declared:
            out["sampling"] = self.sample
        if self.roots is not None:
            out["roots"] = self.list_roots
        return out

    # ------------------------------------------------------------------ callbacks
    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        """The next scripted form answer (a bare dict means ``accept`` with that content)."""
        answer = self._next("elicitation", params)
        if "action" not in answer:
            answer = {"action": "accept", "content": answer}
        return answer

    async def elicit_url(self, params: dict[str, Any]) -> dict[str, Any]:
        """The next scripted URL-elicitation answer."""
        return self._next("url_elicitation", params)

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        """The next scripted sampling answer."""
        return self._next("sampling", params)

    async def list_roots(self) -> list[dict[str, Any]]:
        """The scripted roots (recorded as a request, like the others)."""
        self.requests.append(("roots", {}))
        return list(self.roots or [])

    def _next(self, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((kind, params))
        queue = self._queues[kind]
        if not queue:
            self.unanswered.append((kind, params))
            raise InputRequestError(
                f"ScriptedResponder has no {kind} answer left for {_summary(params)!r}"
            )
        answer = queue.popleft()
        if callable(answer):
            answer = answer(params)
        if isinstance(answer, str):
            if kind != "sampling":
                raise TypeError(f"a str answer is for sampling only, not {kind}")
            return {
                "role": "assistant",
                "content": {"type": "text", "text": answer},
                "model": "scripted",
                "stopReason": "endTurn",
            }
        return dict(answer)

    # ------------------------------------------------------------------ checks
    def asked(self, kind: str) -> list[dict[str, Any]]:
        """The params of every request of one kind (``"elicitation"``, ``"sampling"``...)."""
        return [params for k, params in self.requests if k == kind]

    def assert_done(self) -> None:
        """Every request was answered and every scripted answer was used."""
        left = {kind: len(queue) for kind, queue in self._queues.items() if queue}
        problems = []
        if self.unanswered:
            problems.append(
                "unanswered: "
                + ", ".join(f"{kind} {_summary(params)!r}" for kind, params in self.unanswered)
            )
        if left:
            problems.append(f"answers never asked for: {left}")
        if problems:
            raise AssertionError("ScriptedResponder: " + "; ".join(problems))


def _summary(params: Mapping[str, Any]) -> str:
    if isinstance(params.get("message"), str):
        return str(params["message"])[:80]
    messages = params.get("messages")
    if isinstance(messages, list) and messages:
        content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            return str(content["text"])[:80]
    return str(dict(params))[:80]


__all__ = ["Answer", "ScriptedResponder"]
