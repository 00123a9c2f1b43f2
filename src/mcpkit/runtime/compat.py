"""Every use of another library's private API, in one place, pinned to the versions tested.

A hot-path shortcut, taken only where the version it was tested with is installed and
otherwise replaced by the public way, so that a new release makes mcpkit slower, never
wrong; and one question anyio has no public answer for:

* :func:`send_steps_anywhere` knows uvicorn's ASGI ``send``: a change fan-out writes to
  thousands of listen streams without waking their tasks by running each ``send`` by hand
  (see ``transports/http/stream.py``), which is safe only for a ``send`` whose one wait is
  uvicorn's flow control (an asyncio future, which any task may finish).  It is recognised
  by its class's module, tested with uvicorn 0.30 to 0.54; anything else (another server,
  a middleware's wrapper) takes the public way: the stream's own task awaits ``send``.
* :func:`in_shielded_scope` reads anyio's asyncio task state: the request runner cancels a
  request's task natively and must hold that back while the task is inside a shielded
  scope (anyio's shield stops only anyio's own cancellation).  An anyio without that state
  answers False, so the runner cancels at once.  The anyio major version it was tested
  with (4.x, 4.4 to 4.16) is pinned where versions belong, in pyproject's dependencies
  (``anyio>=4.4,<5``), not read at import time (``importlib.metadata`` is slow on a cold
  start).
* :func:`claim_thread_for_anyio` sets anyio's thread-local, as anyio's own worker threads
  have it, so that ``anyio.from_thread`` works in mcpkit's worker threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .runner import on_asyncio

if TYPE_CHECKING:  # importing the server API does not import asyncio
    import asyncio

__all__ = ["claim_thread_for_anyio", "in_shielded_scope", "send_steps_anywhere"]

#: anyio major version whose asyncio task state :func:`in_shielded_scope` was tested with
#: (pyproject pins ``anyio<5``; tests/transports/test_compat.py holds the two together).
TESTED_ANYIO_MAJOR = 4


#: The uvicorn protocol modules whose ``RequestResponseCycle.send`` waits only on flow
#: control (``await self.flow.drain()``: an ``asyncio.Event``), never on a cancel scope.
_UVICORN_CYCLES = (
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.http.h11_impl",
)


def send_steps_anywhere(send: object) -> bool:
    """Whether ``send`` is uvicorn's own (asyncio): a call of it may be started outside
    the request's task and, if it has to wait for the socket to drain, finished in the
    request's task (``runtime.runner``)."""
    owner = getattr(send, "__self__", None)
    return (
        owner is not None
        and getattr(send, "__name__", None) == "send"
        and type(owner).__module__ in _UVICORN_CYCLES
        and on_asyncio()
    )


def in_shielded_scope(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` (asyncio) is inside a shielded anyio cancel scope of its own."""
    states = getattr(_anyio_asyncio(), "_task_states", None)
    state = states.get(task) if states is not None else None
    scope = getattr(state, "cancel_scope", None)
    while scope is not None and getattr(scope, "_host_task", None) is task:
        if getattr(scope, "_shield", False):
            return True
        scope = getattr(scope, "_parent_scope", None)
    return False


def _anyio_asyncio() -> Any:
    from anyio._backends import _asyncio

    return _asyncio


def claim_thread_for_anyio(token: object) -> None:
    """Make ``anyio.from_thread.run``/``run_sync`` (without a token) and
    ``check_cancelled`` work in this thread, as anyio's ``claim_worker_thread`` does for its
    own workers: anyio offers no public way to claim a thread.  Should a release move its
    thread-local, the thread is left unclaimed and a tool passes ``token=``
    (``anyio.lowlevel.current_token()``, taken on the loop) instead: never a wrong loop."""
    try:
        from anyio._core._eventloop import threadlocals
    except ImportError:
        return
    threadlocals.current_token = token
    threadlocals.current_cancel_scope = None  # nothing to check: an abandoned call runs on
