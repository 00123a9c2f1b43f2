"""The registration decorators keep the decorated function's type (issue #24, typed edges).

``@server.tool`` and ``@server.prompt`` work bare and with options; both forms are
``@overload``ed so mypy sees the user's own function, not ``Any``, and a ``task=`` value
outside its ``Literal`` is a type error.  Checked by running mypy (a real subprocess) on a
small user module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

USER_MODULE = """
from mcpkit import Server

server = Server("typed")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


@server.tool(name="shout", task="optional")
async def loud(text: str) -> str:
    return text.upper()


@server.prompt
def greet(name: str) -> str:
    return f"hello {name}"


@server.prompt(title="Bye")
def bye(name: str) -> str:
    return name


@server.resource("note://{key}")
def note(key: str) -> str:
    return key


reveal_type(add)
reveal_type(loud)
reveal_type(greet)
reveal_type(bye)
reveal_type(note)
server.tool(add, task="sometimes")
"""


def test_decorated_functions_keep_their_types(tmp_path: Path) -> None:
    module = tmp_path / "user_server.py"
    module.write_text(USER_MODULE, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(module),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    revealed = [
        line.split('Revealed type is "', 1)[1].rstrip('"')
        for line in done.stdout.splitlines()
        if "Revealed type is" in line
    ]
    assert revealed == [
        "def (a: int, b: int) -> int",
        "def (text: str) -> typing.Coroutine[Any, Any, str]",
        "def (name: str) -> str",
        "def (name: str) -> str",
        "def (key: str) -> str",
    ], done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "user_server.py:37:" in errors[0], done.stdout
