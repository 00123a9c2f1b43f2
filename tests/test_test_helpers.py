"""One definition per test helper: no two module-level helpers of tests/ or bench/ share a body.

A helper copied into a second file drifts: one copy gets a fix or a longer timeout, the other
keeps the bug, and a reader cannot tell which one a test uses.  The shared ones live in
``tests/support/``, a folder's own in its kit module or ``conftest.py`` (tests/README.md).
This test compares every module-level function that is not a test (fixtures included) by
its body, docstring left out, and names the places when two are the same.  Bodies of a few
statements (a fixture that returns ``"asyncio"``) are overrides, not helpers, and are
not compared.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("tests", "bench")
#: Smallest body (in AST nodes) compared: below it a function is a one-line override.
MIN_NODES = 12
#: Deliberate twins, as ``path:name``.  Each group here is the same code on purpose.
ALLOWED = {
    # Tools of test servers: two tools with one body that the server declares differently
    # (idempotent or not); a test tells them apart by name.
    "tests/scaleout/worker_server.py:job_again",
    "tests/scaleout/worker_server.py:job_once",
    # The same tool in each benchmark contender, written against its own framework.
    "bench/peers/fastmcp_server.py:progress_echo",
    "bench/peers/mcpkit_server.py:progress_echo",
    "bench/peers/sdk_server.py:progress_echo",
}


def body_key(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The body of ``function`` as a comparable string (docstring dropped), or None when it
    is too small to count as a helper."""
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        body = body[1:]
    module = ast.Module(body=body, type_ignores=[])
    if sum(1 for _ in ast.walk(module)) < MIN_NODES:
        return None
    return ast.dump(module)


def duplicate_helpers(root: Path, folders: tuple[str, ...] = FOLDERS) -> list[list[str]]:
    """Groups of module-level helpers (``path:line:name``) under ``folders`` of ``root``
    whose bodies are identical, allow-listed ones left out."""
    groups: dict[str, list[str]] = defaultdict(list)
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            relative = path.relative_to(root).as_posix()
            for node in ast.parse(path.read_text(), str(path)).body:
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if node.name.startswith("test_") or f"{relative}:{node.name}" in ALLOWED:
                    continue
                key = body_key(node)
                if key is not None:
                    groups[key].append(f"{relative}:{node.lineno}:{node.name}")
    return [places for places in groups.values() if len(places) > 1]


def test_no_helper_is_defined_twice() -> None:
    found = duplicate_helpers(ROOT)
    assert not found, "helpers with the same body (keep one, import it):\n" + "\n".join(
        "  " + ", ".join(places) for places in found
    )


def test_the_scan_finds_a_copied_helper(tmp_path: Path) -> None:
    """The scan itself: a helper copied into a second file is found, a renamed copy too, a
    test function and a one-line override are not."""
    helper = (
        "def {name}(text: str) -> list[str]:\n"
        '    """Words."""\n'
        "    words = [w for w in text.split() if w]\n"
        "    return sorted(words, key=len)\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "a.py").write_text(helper.format(name="words"))
    (tmp_path / "tests" / "b.py").write_text(
        helper.format(name="split_words") + "\n\n" + helper.format(name="test_words")
    )
    (tmp_path / "tests" / "c.py").write_text("def anyio_backend() -> str:\n    return 'asyncio'\n")
    (tmp_path / "tests" / "d.py").write_text("def anyio_backend() -> str:\n    return 'asyncio'\n")
    assert duplicate_helpers(tmp_path, ("tests",)) == [
        ["tests/a.py:1:words", "tests/b.py:1:split_words"]
    ]
