"""Tool-use evals and catalog budgets for a server's test suite.

:func:`run_eval` sends one prompt, ``runs`` times, through the host's model loop
(:class:`mcpkit.host.loop.Conversation`) with the server started as ``mcpkit serve``
over stdio, and records which tools the model called with which arguments; the
:class:`EvalReport` asserts a pass rate.  The model is a :class:`ScriptedModel` (or any
``mcpkit.host`` model) built per run by a factory, or, with ``model=None``, a real
provider whose API key is in the environment (``ANTHROPIC_API_KEY``, then
``OPENAI_API_KEY``); without one the test is skipped, saying so.

:func:`assert_catalog_tokens` fails when what ``tools/list`` (and the server's
instructions) cost a model in tokens outgrows a budget, so that CI notices a tool surface
growing past the context it was meant to fit.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..host import Host, HostConfig, ModelConfig, Permission, ServerConfig
from ..host.loop import Conversation, estimate_tokens
from ..host.models import Model, model_from_config
from ..server.server import Server
from .connect import target_of

__all__ = [
    "Call",
    "EvalReport",
    "assert_catalog_tokens",
    "catalog_tokens",
    "expect_call",
    "provider_model",
    "run_eval",
]

#: Real providers tried by ``model=None``, in order: (provider, its key's variable).
PROVIDERS = (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"))


@dataclass(frozen=True)
class Call:
    """One tool call the model made: the server's own tool name and the arguments."""

    tool: str
    arguments: Mapping[str, Any]


#: Judges one run: the calls the model made, in order -> passed or not.
Check = Callable[[list[Call]], bool]


def expect_call(tool: str, **arguments: Any) -> Check:
    """A check that passes when some call is to ``tool`` with at least ``arguments``
    (each given key equal; numbers compare by value, so ``2`` matches ``2.0``)."""

    def check(calls: list[Call]) -> bool:
        return any(
            call.tool == tool
            and all(
                key in call.arguments and call.arguments[key] == v for key, v in arguments.items()
            )
            for call in calls
        )

    check.__doc__ = f"{tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return check


@dataclass
class EvalReport:
    """Every run of one prompt: the calls made, the final answer, whether it passed."""

    prompt: str
    expected: str
    runs: list[tuple[list[Call], str, bool]] = field(default_factory=list)

    @property
    def passed(self) -> int:
        """How many runs passed the check."""
        return sum(1 for _, _, ok in self.runs if ok)

    @property
    def pass_rate(self) -> float:
        """The share of runs that passed, 0..1."""
        return self.passed / len(self.runs) if self.runs else 0.0

    def assert_pass_rate(self, at_least: float) -> None:
        """Fail, listing the runs that missed, when fewer than ``at_least`` (0..1) passed."""
        if self.pass_rate >= at_least:
            return
        missed = [
            f"  run {i + 1}: " + (", ".join(_shown(c) for c in calls) or "no tool call")
            for i, (calls, _, ok) in enumerate(self.runs)
            if not ok
        ]
        raise AssertionError(
            f"{self.prompt!r}: {self.passed}/{len(self.runs)} runs called {self.expected} "
            f"(pass rate {self.pass_rate:.0%}, needed {at_least:.0%}); misses:\n"
            + "\n".join(missed)
        )


def _shown(call: Call) -> str:
    return f"{call.tool}({json.dumps(dict(call.arguments), sort_keys=True)})"


def provider_model() -> Model:
    """The first real provider whose API key is set (see :data:`PROVIDERS`); skips the
    calling test when none is."""
    for provider, variable in PROVIDERS:
        if os.environ.get(variable):
            return model_from_config(ModelConfig(provider=provider, api_key_env=variable))
    import pytest

    keys = " or ".join(variable for _, variable in PROVIDERS)
    pytest.skip(f"no model for the eval: set {keys}, or pass model= (a ScriptedModel factory)")


async def run_eval(
    server: Server | str,
    prompt: str,
    *,
    expect: Check,
    runs: int = 5,
    model: Callable[[], Model] | None = None,
    system: str | None = None,
    max_steps: int = 6,
) -> EvalReport:
    """Send ``prompt`` ``runs`` times, each in a new conversation with a new model from
    ``model()`` (None: :func:`provider_model`), and judge each run's calls with
    ``expect``.  The server runs as ``mcpkit serve`` over stdio (a ``Server`` must be a
    module global, or give its ``file.py:name``); the model sees its tools as
    ``NAME__tool`` (NAME: the server's name), every call allowed."""
    make_model = model or provider_model
    target = target_of(server)
    name = server.name if isinstance(server, Server) else _stem(target)
    command = (sys.executable, "-m", "mcpkit", "serve", target, "--state", "memory:")
    config = HostConfig(
        servers=(ServerConfig(name=name, command=command),),
        default_permission=Permission.ALLOW,
    )
    report = EvalReport(prompt, expect.__doc__ or str(getattr(expect, "__name__", "the check")))
    async with Host(config) as host:
        for _ in range(runs):
            calls: list[Call] = []
            chat = Conversation(
                host,
                make_model(),
                system=system,
                max_steps=max_steps,
                on_event=_recorder(host, calls),
            )
            answer = await chat.send(prompt)
            report.runs.append((calls, answer, expect(calls)))
    return report


def _recorder(host: Host, calls: list[Call]) -> Callable[[str, dict[str, Any]], None]:
    """A conversation's event sink that appends each tool call to ``calls``, under the
    server's own tool name."""

    def record(kind: str, data: dict[str, Any]) -> None:
        if kind == "tool_call":
            tool = host.tool(data["name"])
            own = tool.name if tool is not None else data["name"]
            calls.append(Call(own, dict(data.get("arguments") or {})))

    return record


def _stem(target: str) -> str:
    """``calc`` for ``path/calc.py:server`` or ``pkg.calc:server``."""
    spec = target.partition(":")[0]
    return spec.rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]


# ---------------------------------------------------------------------- catalog budget


def catalog_tokens(server: Server) -> tuple[int, str]:
    """(tokens, how they were counted) for the server's ``tools/list`` result as JSON plus
    its instructions.  Counted with tiktoken's ``o200k_base`` encoding when tiktoken is
    installed (and has its encoding file), else with the host's ``estimate_tokens``: about
    four ASCII characters per token and one per other character, an estimate that errs
    high."""
    tools, instructions = _in_a_thread(_catalog, server)
    text = json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)
    text += instructions or ""
    encode = _tiktoken()
    if encode is not None:
        return len(encode(text)), "tiktoken o200k_base"
    return estimate_tokens(text), "estimate_tokens (about 4 ASCII characters a token)"


def assert_catalog_tokens(server: Server, *, max_tokens: int) -> int:
    """Fail when the server's tool catalog (see :func:`catalog_tokens`) costs more than
    ``max_tokens``, naming the largest tools; returns the count."""
    used, how = catalog_tokens(server)
    if used <= max_tokens:
        return used
    tools, _ = _in_a_thread(_catalog, server)
    sizes = sorted(
        ((estimate_tokens(json.dumps(t, separators=(",", ":"))), t["name"]) for t in tools),
        reverse=True,
    )
    largest = ", ".join(f"{name} (~{size})" for size, name in sizes[:5])
    raise AssertionError(
        f"{server.name!r}: tools/list and instructions cost {used} tokens ({how}), over the "
        f"budget of {max_tokens}; {len(tools)} tools, the largest: {largest}"
    )


async def _catalog(server: Server) -> tuple[list[dict[str, Any]], str | None]:
    from ..client import Client

    async with Client(server) as client:
        tools = [dict(tool) for tool in await client.list_tools()]
        return tools, client.server_info.instructions


def _in_a_thread(fn: Callable[[Server], Any], server: Server) -> Any:
    """``anyio.run(fn, server)`` in a thread of its own: callable from a sync test and
    from inside a running event loop alike."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, server).result()


def _tiktoken() -> Callable[[str], list[int]] | None:
    try:  # an optional tokenizer: not a dependency of mcpkit
        tiktoken = importlib.import_module("tiktoken")
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return None
    encode: Callable[[str], list[int]] = encoding.encode
    return encode
