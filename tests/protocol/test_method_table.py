"""The method table's schema columns name real definitions of the official schemas.

``MethodSpec.params_type`` and ``result_type`` are the table's link to the schema; a typo
or a renamed definition would leave them pointing at nothing, so every era a method lives
in is checked against that revision's ``schema.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpkit.types.methods import METHODS
from mcpkit.types.versions import LATEST_LEGACY, LATEST_MODERN

SPEC = Path(__file__).resolve().parents[2] / "src" / "mcpkit" / "testing" / "spec"


@pytest.mark.parametrize(
    ("revision", "era"), [(LATEST_MODERN, "modern"), (LATEST_LEGACY, "legacy")]
)
def test_params_and_result_types_are_schema_definitions(revision: str, era: str) -> None:
    defs = json.loads((SPEC / revision / "schema.json").read_text(encoding="utf-8"))["$defs"]
    named = [
        (method, type_name)
        for method, spec in METHODS.items()
        if era in spec.eras
        for type_name in (spec.params_type, spec.result_type)
        if type_name is not None
    ]
    assert len(named) > 15  # the columns are filled in, not left empty
    missing = [(method, name) for method, name in named if name not in defs]
    assert not missing, f"types not in the {revision} schema: {missing}"


def test_mrtr_methods_are_the_named_calls() -> None:
    """Only a call that names its target (``Mcp-Name``) can come back ``input_required``."""
    mrtr = {m for m, s in METHODS.items() if s.mrtr}
    assert mrtr and all(METHODS[m].name_param is not None for m in mrtr)
