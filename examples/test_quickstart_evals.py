"""Tool-use evals and a catalog budget for the quick-start server.

    pytest examples/test_quickstart_evals.py

``run_eval`` sends a prompt several times through the host's model loop and reports how
often the model called the tool you expected, with the arguments you expected.  Here the
model is scripted (it reads the numbers off the prompt), so the suite runs anywhere; the
last test asks a real model when ANTHROPIC_API_KEY or OPENAI_API_KEY is set, and is
skipped otherwise.  ``assert_catalog_tokens`` fails when the tools outgrow their budget.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import server

from mcpkit.host.models import Model, ModelReply, ToolCall
from mcpkit.host.models.scripted import ScriptedModel
from mcpkit.testing import assert_catalog_tokens, expect_call, run_eval

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def adding_model() -> Model:
    """Reads two numbers off the prompt and adds them with the server's ``add``."""

    def choose(messages: list[dict[str, Any]]) -> ModelReply:
        a, b = map(int, re.findall(r"\d+", messages[-1]["content"][-1]["text"]))
        return ModelReply(tool_calls=(ToolCall("c1", "quickstart__add", {"a": a, "b": b}),))

    return ScriptedModel([choose, {"text": "Done."}])


async def test_the_model_adds_with_add() -> None:
    report = await run_eval(
        server, "What is 2 plus 3?", expect=expect_call("add", a=2, b=3), runs=3, model=adding_model
    )
    report.assert_pass_rate(1.0)


async def test_a_real_model_adds_with_add() -> None:
    """model=None: the provider whose key is set; skipped without one."""
    report = await run_eval(
        server, "Use a tool to add 2 and 3.", expect=expect_call("add", a=2, b=3), runs=3
    )
    report.assert_pass_rate(2 / 3)


def test_the_catalog_stays_small() -> None:
    assert_catalog_tokens(server, max_tokens=500)
