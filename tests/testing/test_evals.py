"""``mcpkit.testing`` evals: a prompt run N times through the host's model loop against the
quick-start server (a real ``mcpkit serve`` process), and the tool catalog's token budget."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Server
from mcpkit.host.models import Model, ModelReply, ToolCall
from mcpkit.host.models.scripted import ScriptedModel
from mcpkit.testing import EvalReport, assert_catalog_tokens, expect_call, run_eval
from mcpkit.testing.evals import catalog_tokens, provider_model

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
TARGET = f"{QUICKSTART}:server"


def _numbers(messages: list[dict[str, Any]]) -> list[int]:
    said = messages[-1]["content"][-1]["text"]
    return [int(n) for n in re.findall(r"\d+", said)]


def _tool_said(messages: list[dict[str, Any]]) -> ModelReply:
    result = messages[-1]["content"][0]["content"]
    return ModelReply(text="The tool said: " + " ".join(b["text"] for b in result))


def sometimes_wrong(every: int) -> Callable[[], Model]:
    """A model factory: each model adds the numbers of the prompt with quickstart's
    ``add``, except every ``every``-th, which echoes them instead."""
    runs = itertools.count(1)

    def make() -> Model:
        wrong = next(runs) % every == 0

        def choose(messages: list[dict[str, Any]]) -> ModelReply:
            a, b = _numbers(messages)
            if wrong:
                call = ToolCall("c1", "quickstart__echo", {"text": f"{a} {b}"})
            else:
                call = ToolCall("c1", "quickstart__add", {"a": a, "b": b})
            return ModelReply(tool_calls=(call,))

        return ScriptedModel([choose, _tool_said])

    return make


@pytest.mark.anyio
async def test_an_eval_over_the_scripted_model_reports_its_pass_rate() -> None:
    report = await run_eval(
        TARGET,
        "Add 2 and 3",
        expect=expect_call("add", a=2, b=3),
        runs=5,
        model=sometimes_wrong(every=5),
    )
    assert isinstance(report, EvalReport)
    assert (report.passed, len(report.runs), report.pass_rate) == (4, 5, 0.8)
    calls, answer, ok = report.runs[0]
    assert ok and [(c.tool, dict(c.arguments)) for c in calls] == [("add", {"a": 2, "b": 3})]
    assert '"sum":5' in answer.replace(" ", "")  # the real server ran the call
    report.assert_pass_rate(0.8)
    with pytest.raises(AssertionError, match=r"4/5 runs called add\(a=2, b=3\)") as failed:
        report.assert_pass_rate(0.9)
    assert 'run 5: echo({"text": "2 3"})' in str(failed.value)


def test_expect_call_matches_a_subset_of_the_arguments() -> None:
    from mcpkit.testing.evals import Call

    check = expect_call("add", a=2)
    assert check([Call("echo", {"text": "x"}), Call("add", {"a": 2.0, "b": 9})])
    assert not check([Call("add", {"a": 3, "b": 2})])
    assert not check([Call("add", {"b": 2})])
    assert not check([])


def test_without_a_provider_key_the_eval_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(pytest.skip.Exception, match="set ANTHROPIC_API_KEY or OPENAI_API_KEY"):
        provider_model()


@pytest.mark.anyio
async def test_a_real_provider_chooses_add() -> None:
    """Runs when ANTHROPIC_API_KEY or OPENAI_API_KEY is set; skipped (saying so) otherwise."""
    provider_model()  # skips here, before the server starts, without a key
    report = await run_eval(
        TARGET,
        "Use the add tool to add 2 and 3.",
        expect=expect_call("add", a=2, b=3),
        runs=3,
    )
    report.assert_pass_rate(2 / 3)


# ---------------------------------------------------------------------- catalog budget

#: The budget the small server below is held to.
BUDGET = 150


def small_server() -> Server:
    server = Server("budget", "1.0.0", instructions="Arithmetic.")

    @server.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool
    def negate(x: float) -> float:
        """The number with its sign flipped."""
        return -x

    return server


def test_a_catalog_within_its_budget_passes() -> None:
    used = assert_catalog_tokens(small_server(), max_tokens=BUDGET)
    assert 0 < used <= BUDGET
    tokens, how = catalog_tokens(small_server())
    assert tokens == used and how


def test_adding_a_tool_past_the_budget_fails_naming_it() -> None:
    server = small_server()

    @server.tool
    def report(region: str, quarter: int, currency: str = "EUR", detail: bool = False) -> str:
        """Build the quarterly sales report of a region: revenue, margin and the ten best
        customers, each with their orders, in the currency asked for; with detail, every
        line of every order, their discounts, taxes and shipping, grouped by warehouse."""
        return region

    with pytest.raises(AssertionError, match=rf"over the budget of {BUDGET}") as failed:
        assert_catalog_tokens(server, max_tokens=BUDGET)
    assert "the largest: report" in str(failed.value)


@pytest.mark.anyio
async def test_the_budget_is_counted_from_inside_an_event_loop_too() -> None:
    assert assert_catalog_tokens(small_server(), max_tokens=BUDGET) > 0
