"""Every use of another library's private API, in one place.  Each answers what the
public API would, or takes the public way, when the library has changed: a new release
makes mcpkit slower, never wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .runner import on_asyncio

if TYPE_CHECKING:  # importing the server API does not import asyncio
    import asyncio

__all__ = ["claim_thread_for_anyio", "in_shielded_scope", "send_steps_anywhere"]

#: The anyio major :func:`in_shielded_scope` was tested with: pyproject pins it (not read
#: at import: a slow cold start), tests/transports/test_compat.py holds the two together.
TESTED_ANYIO_MAJOR = 4

#: uvicorn's protocol modules whose ``RequestResponseCycle.send`` waits only on flow
#: control (an ``asyncio.Event``), never on a cancel scope (tested with uvicorn 0.30-0.55).
_UVICORN_CYCLES = ("uvicorn.protocols.http.httptools_impl", "uvicorn.protocols.http.h11_impl")


def send_steps_anywhere(send: object) -> bool:
    """Whether ``send`` is uvicorn's own (asyncio): a call of it may be started outside
    the request's task and finished in it, should it wait for the socket to drain.  A
    change fan-out runs it by hand for thousands of listen streams without waking their
    tasks (``transports/http/stream.py``); anything else, a middleware's wrapper included,
    is awaited by the stream's own task."""
    owner = getattr(send, "__self__", None)
    return (
        owner is not None
        and getattr(send, "__name__", None) == "send"
        and type(owner).__module__ in _UVICORN_CYCLES
        and on_asyncio()
    )


def in_shielded_scope(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` (asyncio) is inside a shielded anyio cancel scope of its own: the
    request runner, cancelling a task natively, holds back meanwhile.  anyio has no public
    answer; one without that state answers False (the runner cancels at once)."""
    from anyio._backends import _asyncio

    states = getattr(_asyncio, "_task_states", None)
    scope = getattr(states.get(task) if states is not None else None, "cancel_scope", None)
    while scope is not None and getattr(scope, "_host_task", None) is task:
        if getattr(scope, "_shield", False):
            return True
        scope = getattr(scope, "_parent_scope", None)
    return False


def claim_thread_for_anyio(token: object) -> None:
    """Claim this mcpkit worker thread for ``anyio.from_thread.run``/``run_sync`` (without
    a token) and ``check_cancelled``, as anyio's ``claim_worker_thread`` does for its own.
    Should a release move that thread-local, the thread stays unclaimed and a tool passes
    ``token=`` (``anyio.lowlevel.current_token()``, taken on the loop): never a wrong loop."""
    try:
        from anyio._core._eventloop import threadlocals
    except ImportError:
        return
    threadlocals.current_token = token
    threadlocals.current_cancel_scope = None  # nothing to check: an abandoned call runs on
