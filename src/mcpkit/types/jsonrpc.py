"""JSON-RPC 2.0 envelopes as plain dicts, and the rules for telling them apart.

Messages stay plain ``dict`` objects from decode to dispatch: building model objects for
every envelope would cost more than the rest of the hot path.  :func:`classify` checks the
envelope once, strictly, and says what the message is.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeAlias

from .errors import INVALID_REQUEST, McpError

RequestId: TypeAlias = str | int
Message: TypeAlias = dict[str, Any]


class Kind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESULT = "result"
    ERROR = "error"


def _invalid(detail: str) -> McpError:
    return McpError(INVALID_REQUEST, f"Invalid Request: {detail}")


def classify(message: object) -> Kind:
    """Validate the JSON-RPC envelope and return its kind, or raise -32600.

    Batches (JSON arrays) were removed in 2025-06-18 and are rejected here.
    """
    if not isinstance(message, dict):
        raise _invalid("a JSON-RPC message must be a JSON object (batches are not supported)")
    if message.get("jsonrpc") != "2.0":
        raise _invalid('"jsonrpc" must be "2.0"')
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            raise _invalid('"method" must be a non-empty string')
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise _invalid('"params" must be an object')
        if "id" in message:
            request_id = message["id"]
            # Exact types first (the usual ids), without a call; bool is an int subclass.
            if (
                type(request_id) is not int
                and type(request_id) is not str
                and not _valid_id(request_id)
            ):
                raise _invalid('"id" must be a string or an integer')
            return Kind.REQUEST
        return Kind.NOTIFICATION
    if "result" in message:
        if "error" in message:
            raise _invalid('a response has either "result" or "error", not both')
        if not _valid_id(message.get("id")):
            raise _invalid('a response needs a string or integer "id"')
        return Kind.RESULT
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise _invalid('"error" must be an object with an integer "code"')
        return Kind.ERROR
    raise _invalid('no "method", "result" or "error" member')


def _valid_id(value: object) -> bool:
    return (isinstance(value, (str, int))) and not isinstance(value, bool)


def answerable_id(message: object) -> RequestId | None:
    """The id to answer a message :func:`classify` refused with: its own when it has a
    valid one, else None (JSON-RPC's null id for a request that cannot be identified)."""
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if _valid_id(request_id) else None


def request(request_id: RequestId, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(request_id: RequestId, value: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: RequestId | None, err: McpError) -> Message:
    """An error response; ``request_id`` None omits the id (allowed when it is unknown)."""
    message: Message = {"jsonrpc": "2.0", "error": err.to_wire()}
    if request_id is not None:
        message["id"] = request_id
    return message


def params_of(message: Message) -> dict[str, Any]:
    """The params object of a request/notification (``{}`` when absent)."""
    params = message.get("params")
    return params if isinstance(params, dict) else {}
