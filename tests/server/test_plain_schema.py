"""Plain parameters get a hand-written input schema identical to pydantic's, and no
pydantic model until a call needs one (registration cost and cold starts)."""

from __future__ import annotations

import inspect
import itertools
import subprocess
import sys
from typing import Any

import pydantic
import pytest

from mcpkit import Context, Server
from mcpkit.server.schema import ArgumentModel, inline_refs, strip_titles

KINDS = (str, int, float, bool)
DEFAULTS: tuple[Any, ...] = (inspect.Parameter.empty, None, 0, 1.5, True, "", "x")


def _pydantic_schema(fields: dict[str, Any]) -> dict[str, Any]:
    """What the schema was before the hand-written path: pydantic's, titles stripped."""
    model = pydantic.create_model(
        "X", __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, extra="ignore"), **fields
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return inline_refs(strip_titles(schema))


def _function(params: list[tuple[str, type, Any]]) -> Any:
    def fn(**kwargs: Any) -> str:
        return "ok"

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind, default=default
            )
            for name, kind, default in params
        ]
    )
    fn.__annotations__ = {name: kind for name, kind, _ in params}
    return fn


CASES = [
    [("a", k1, d1), ("b", k2, d2)]
    for (k1, d1), (k2, d2) in itertools.product(itertools.product(KINDS, DEFAULTS), repeat=2)
    if not (d1 is not inspect.Parameter.empty and d2 is inspect.Parameter.empty)
]


@pytest.mark.parametrize("params", [*CASES[::7], []], ids=lambda p: repr(p)[:60])
def test_plain_schema_equals_pydantics(params: list[tuple[str, type, Any]]) -> None:
    fn = _function(params)
    fields = {
        name: (kind, ... if default is inspect.Parameter.empty else default)
        for name, kind, default in params
    }
    model = ArgumentModel(fn, Context, title="X")
    assert model.schema == _pydantic_schema(fields)
    assert model._model is None  # no pydantic model built for a plain signature


def test_a_plain_tool_builds_its_model_only_for_a_call_that_needs_it() -> None:
    server = Server("plain")

    @server.tool
    def add(a: int, b: int = 2) -> str:
        return str(a + b)

    arguments = server.tools["add"].arguments
    assert arguments is not None and arguments._model is None
    assert arguments.validate({"a": 1}) == {"a": 1, "b": 2}  # exact types: fast path
    assert arguments._model is None
    assert arguments.validate({"a": "3"}) == {"a": 3, "b": 2}  # coercion: the model
    assert arguments._model is not None
    with pytest.raises(pydantic.ValidationError):
        arguments.validate({"a": "three"})


def test_a_server_of_plain_tools_starts_without_pydantic() -> None:
    code = (
        "import sys\nfrom mcpkit import Server\nserver = Server('s')\n"
        "@server.tool\ndef echo(text: str, times: int = 1) -> str:\n    return text\n"
        "print('pydantic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
