"""Parameter descriptions from docstrings (Google, NumPy, reST), on both eras' lists."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from mcpkit import Server
from support.inproc import call, legacy, modern

pytestmark = pytest.mark.anyio

ERAS = [pytest.param(modern, id="modern"), pytest.param(legacy, id="legacy")]


def build() -> Server:
    server = Server("docs")

    @server.tool
    def google(city: str, days: int = 1) -> str:
        """Forecast for a city.

        Looks the city up first.

        Args:
            city: The city's name, e.g. "Oslo".
            days: How many days ahead.
        """
        return city

    @server.tool
    def numpy(city: str) -> str:
        """Forecast, NumPy style.

        Parameters
        ----------
        city : str
            Where to look.
        """
        return city

    @server.tool
    def rest(city: str, unit: Annotated[str, Field(description="From Field")] = "C") -> str:
        """Forecast, reST style.

        :param city: The place.
        :param unit: Ignored: Field's description wins.
        """
        return city

    @server.tool
    def plain(city: str) -> str:
        """No sections here: Args are not mentioned."""
        return city

    @server.prompt
    def brief(topic: str) -> str:
        """Write a brief.

        Args:
            topic: What the brief is about.
        """
        return topic

    return server


def tool(listed: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(t for t in listed["tools"] if t["name"] == name)
    return found


@pytest.mark.parametrize("era", ERAS)
async def test_sections_become_parameter_descriptions(era: Any) -> None:
    listed = await call(build(), "tools/list", {}, era())
    google = tool(listed, "google")
    assert google["description"] == "Forecast for a city.\n\nLooks the city up first."
    props = google["inputSchema"]["properties"]
    assert props["city"]["description"] == 'The city\'s name, e.g. "Oslo".'
    assert props["days"]["description"] == "How many days ahead."
    numpy = tool(listed, "numpy")
    assert numpy["inputSchema"]["properties"]["city"]["description"] == "Where to look."
    assert numpy["description"] == "Forecast, NumPy style."
    rest = tool(listed, "rest")["inputSchema"]["properties"]
    assert rest["city"]["description"] == "The place."
    assert rest["unit"]["description"] == "From Field"
    plain = tool(listed, "plain")
    assert plain["description"] == "No sections here: Args are not mentioned."
    assert "description" not in plain["inputSchema"]["properties"]["city"]
    prompts = await call(build(), "prompts/list", {}, era())
    (brief,) = prompts["prompts"]
    assert brief["description"] == "Write a brief."
    assert brief["arguments"][0]["description"] == "What the brief is about."
