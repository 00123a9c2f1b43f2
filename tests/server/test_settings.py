"""``Server.setting``: the environment variables a server declares it reads."""

from __future__ import annotations

import pytest

from mcpkit import Server
from mcpkit.server import Setting


def test_a_setting_reads_the_environment_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server("s")
    key = server.setting("S_API_KEY", description="The API key", secret=True)
    units = server.setting("S_UNITS", description="metric or imperial", default="metric")
    monkeypatch.delenv("S_API_KEY", raising=False)
    monkeypatch.delenv("S_UNITS", raising=False)
    assert (key.value, units.value) == (None, "metric")
    monkeypatch.setenv("S_API_KEY", "k-1")
    monkeypatch.setenv("S_UNITS", "imperial")
    assert (key.value, units.value) == ("k-1", "imperial")
    assert server.settings == {"S_API_KEY": key, "S_UNITS": units}
    assert isinstance(key, Setting) and key.required and key.secret
    assert not units.required and not units.secret


@pytest.mark.parametrize(
    ("name", "options", "says"),
    [
        ("API KEY", {"description": "x"}, "not an environment variable name"),
        ("API_KEY", {"description": " "}, "needs a description"),
        ("API_KEY", {"description": "x", "default": "a", "required": True}, "cannot be required"),
    ],
)
def test_a_bad_declaration_is_refused(name: str, options: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Server("s").setting(name, **options)  # type: ignore[arg-type]


def test_a_setting_is_declared_once() -> None:
    server = Server("s")
    server.setting("TOKEN", description="a token")
    with pytest.raises(ValueError, match="'TOKEN' is declared twice"):
        server.setting("TOKEN", description="again")
