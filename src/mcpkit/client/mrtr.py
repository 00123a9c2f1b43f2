"""Multi round-trip requests (2026-07-28, SEP-2322), client side.

``tools/call``, ``prompts/get`` and ``resources/read`` may answer
``{"resultType": "input_required", "inputRequests": {...}, "requestState": "..."}``.  The
client answers every input request with the application's callbacks, then sends the *same*
method and params again as a new request (new JSON-RPC id, fresh ``_meta``) with
``inputResponses`` for this round and ``requestState`` echoed byte for byte, or left out
when the server gave none.  Rules that are easy to get wrong:

* a result without ``resultType`` is complete (legacy servers never send it);
* any other value (e.g. a tasks-extension ``"task"`` we never asked for) is invalid;
* earlier rounds' answers are not re-sent: the server keeps what it needs in its state;
* the number of rounds is bounded, so a confused server cannot keep us looping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .callbacks import Callbacks
from .errors import InvalidResultError, TooManyInputRounds

MRTR_FIELDS = ("inputResponses", "requestState")


async def continue_with_input(
    method: str,
    params: dict[str, Any],
    result: dict[str, Any],
    send: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    callbacks: Callbacks,
    max_rounds: int,
    allow_task: bool = False,
) -> dict[str, Any]:
    """Given the first round's ``result`` (of ``params``), ``send`` the next rounds until
    the result is complete (or, when the client declared the tasks extension, a task was
    created); returns that result.  Callers check the first result themselves: it is
    nearly always complete, and then this machinery is skipped."""
    base: dict[str, Any] | None = None  # params without MRTR fields, for the next rounds
    rounds = 0
    while True:
        kind = result.get("resultType", "complete")
        if kind == "complete" or (kind == "task" and allow_task):
            return result
        if kind != "input_required":
            raise InvalidResultError(
                f"{method} returned resultType {kind!r}, which this client did not ask for "
                f"(only 'complete' and 'input_required' are valid here)"
            )
        rounds += 1
        if rounds > max_rounds:
            raise TooManyInputRounds(method, max_rounds)
        responses = await answer_all(method, result, callbacks)
        if base is None:
            base = {k: v for k, v in params.items() if k not in MRTR_FIELDS}
        current = dict(base)
        if responses:
            current["inputResponses"] = responses
        if "requestState" in result:
            current["requestState"] = result["requestState"]
        result = await send(current)


async def answer_all(method: str, result: dict[str, Any], callbacks: Callbacks) -> dict[str, Any]:
    """Answers for every ``inputRequests`` entry of an ``input_required`` result."""
    requests = result.get("inputRequests")
    if requests is None and "requestState" not in result:
        raise InvalidResultError(
            f"{method} returned input_required with neither inputRequests nor requestState"
        )
    if requests is None:
        return {}  # load shedding: retry with the state alone
    if not isinstance(requests, dict):
        raise InvalidResultError(f"{method}: inputRequests must be an object")
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise InvalidResultError(f"{method}: input request {key!r} has no method")
        params = request.get("params")
        if params is not None and not isinstance(params, dict):
            raise InvalidResultError(f"{method}: input request {key!r} has invalid params")
        responses[key] = await callbacks.answer(request["method"], params or {})
    return responses
