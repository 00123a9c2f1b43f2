"""The layering of docs/architecture.md, the public API, and what ``import mcpkit`` costs.

Layers, lowest first (a module may import only its own layer and lower ones):

    types < protocol/auth < runtime < transports < state < server < client < compose
        < host/gateway/serverless < cli

``testing`` (and the package root, the public facade) may import anything, and nothing
below them may import them.  Two extra rules: ``server`` must not import ``transports``
(implied by the order) and ``client`` must not import ``server``.  Every import counts:
lazy imports inside functions, and imports under ``if TYPE_CHECKING:`` too (an annotation
that names a higher layer is a dependency on it all the same).
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types as pytypes
from pathlib import Path

import pytest

import mcpkit

SRC = Path(__file__).resolve().parent.parent / "src" / "mcpkit"
TOP = 100
LAYERS: dict[str, int] = {
    "types": 0,
    "protocol": 1,
    "runtime": 2,
    "transports": 3,
    "state": 4,
    # OpenTelemetry helpers (spans, propagation, SDK setup): below server and client, which
    # both import it; it imports only types and the OpenTelemetry packages.
    "telemetry": 4,
    "server": 5,
    "client": 6,
    # Composition: proxies, transforms, OpenAPI import; built from a server and a client,
    # and below the roles that use it (the gateway mounts proxies; compose imports no role).
    "compose": 7,
    "host": 8,
    "gateway": 8,
    # The OAuth resource-server policy and the client-side OAuth flow: it imports only
    # types; the HTTP app takes its policy (``McpHttpApp(auth=)``), and the gateway and cli
    # use it, so it sits beside protocol.
    "auth": 1,
    # The OAuth authorization server (mcpkit.auth.server): a sub-package with a rank of its
    # own, above the state backends its records live on and the resource server it fronts;
    # the rest of ``auth`` stays beside protocol and never imports it.
    "auth.server": 5,
    # The ASGI body loop that transports.http and auth.resource_server share (asgi.py):
    # below both, it imports nothing of mcpkit.
    "asgi": 1,
    # Function-platform adapters around the HTTP app (Lambda, Cloud Functions, Cloud Run).
    "serverless": 8,
    "cli": 9,
    "testing": TOP,
    "<root>": TOP,  # mcpkit/__init__.py and __main__.py
}
FORBIDDEN: dict[str, set[str]] = {"client": {"server"}, "server": {"transports"}}

#: Modules that break the layering today (found by this test), with the offending edges.
#: Empty since the role-agnostic pieces (exchange, changes, listen, legacy session) moved
#: into ``runtime`` and transports talk to the server through ``runtime.contracts``.
KNOWN_VIOLATIONS: dict[str, str] = {}

#: Edges allowed on purpose, each a lazy import inside one function, with the reason.
ALLOWED_EDGES: dict[tuple[str, str], str] = {
    (
        "mcpkit.server.lifespan",
        "mcpkit.transports.launch",
    ): "Server.run(): the convenience launcher behind `python demo.py`, imported only "
    "when called; the framework itself never touches a transport",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "<root>"
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in LAYERS:  # a sub-package's own rank
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def from_source(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module a ``from ... import`` in ``module`` (``is_package``: an
    ``__init__``) reads from, when it is mcpkit's; None for another library's."""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    if node.module and node.module.split(".")[0] == "mcpkit":
        return node.module
    return None


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(imported mcpkit module, line) for every import in ``path``, type-checking ones too."""
    module, is_package = module_name(path), path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "mcpkit"]
        elif isinstance(node, ast.ImportFrom):
            target = from_source(module, is_package, node)
            if target is None:
                continue
            if node.module:
                found.append((target, node.lineno))
            else:  # from . import x, y
                found += [(f"{target}.{a.name}", node.lineno) for a in node.names]
    return found


MODULES = sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    missing = packages - set(LAYERS)
    assert not missing, f"packages without a declared layer: {sorted(missing)}"


def test_the_walker_sees_imports() -> None:
    # guard against a walker that silently finds nothing
    edges = {target for path in MODULES for target, _ in imports_of(path)}
    assert "mcpkit.types.errors" in edges and "mcpkit.protocol.negotiation" in edges
    # server/layers.py names Server only under ``if TYPE_CHECKING:``; the walker counts it
    layers = {target for target, _ in imports_of(SRC / "server" / "layers.py")}
    assert "mcpkit.server.server" in layers


def _params() -> list[object]:
    out: list[object] = []
    for path in MODULES:
        name = module_name(path)
        marks = []
        if name in KNOWN_VIOLATIONS:
            marks.append(
                pytest.mark.xfail(
                    strict=True,
                    reason=f"BUG (layering of docs/architecture.md): {KNOWN_VIOLATIONS[name]}",
                )
            )
        out.append(pytest.param(path, id=name, marks=marks))
    return out


@pytest.mark.parametrize("path", _params())
def test_module_imports_only_its_layer_and_below(path: Path) -> None:
    module = module_name(path)
    own = layer_of(module)
    rank = LAYERS.get(own)
    assert rank is not None, f"{module}: package {own!r} has no declared layer"
    problems = []
    for target, line in imports_of(path):
        other = layer_of(target)
        if other == own or (module, target) in ALLOWED_EDGES:
            continue
        other_rank = LAYERS.get(other)
        if other_rank is None or other_rank > rank or other in FORBIDDEN.get(own, set()):
            problems.append(f"line {line}: {own} -> {other} ({target})")
    assert not problems, f"{module} imports from above its layer:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("edge", sorted(ALLOWED_EDGES))
def test_allowed_edges_exist_and_are_lazy(edge: tuple[str, str]) -> None:
    """An allowed edge that no longer exists is stale; one at module level is not lazy."""
    module, target = edge
    path = SRC.parent / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    lines = [line for t, line in imports_of(path) if t == target]
    assert lines, f"{module} no longer imports {target}: drop it from ALLOWED_EDGES"
    module_level = [
        n.lineno
        for n in tree.body
        if id(n) in top_level and isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert not set(lines) & set(module_level), f"{module} imports {target} at module level"


def test_server_imports_no_http_library() -> None:
    offenders = []
    for path in (SRC / "server").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in {"httpx", "uvicorn", "starlette", "h11", "httptools"}:
                    offenders.append(f"{path.name}:{node.lineno} {name}")
    assert not offenders


def _private_definitions() -> dict[str, set[str]]:
    """Each ``_name`` (not dunder) defined in src -> the packages that define it: functions,
    classes, module globals and attributes assigned anywhere."""
    owners: dict[str, set[str]] = {}
    for path in MODULES:
        package = layer_of(module_name(path))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            if name and name.startswith("_") and not name.startswith("__"):
                owners.setdefault(name, set()).add(package)
    return owners


MODULE_NAMES = {module_name(path) for path in MODULES}
PACKAGES = {module_name(path) for path in MODULES if path.name == "__init__.py"}


def _imported_from(module: str, tree: ast.Module) -> list[tuple[str, str, str, int]]:
    """(bound name, imported name, absolute module it comes from, line) for each name an
    ``import``/``from ... import`` in ``module`` (a package's ``__init__`` by its package's
    name) binds from mcpkit."""
    bound: list[tuple[str, str, str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "mcpkit" and a.asname:
                    parent, _, leaf = a.name.rpartition(".")
                    bound.append((a.asname, leaf, parent, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            source = from_source(module, module in PACKAGES, node)
            if source is not None:
                bound += [(a.asname or a.name, a.name, source, node.lineno) for a in node.names]
    return bound


def _annotated_names(annotation: ast.expr | None) -> set[str]:
    """The plain names an annotation mentions (``Server``, ``Server | None``,
    ``"Server"``, ``Optional[Server]``)."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}


def _typed_as_foreign(tree: ast.Module, foreign: dict[str, str]) -> dict[ast.AST, str]:
    """Each ``Name`` node that reads a parameter annotated with a class of another package
    (``foreign``: bound name -> its module) -> that module.  Shadowing inside the function
    is not followed: a parameter keeps its annotated type."""
    typed: dict[ast.AST, str] = {}
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = func.args
        params = {
            a.arg: origin
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
            for name in _annotated_names(a.annotation)
            if (origin := foreign.get(name)) is not None
        }
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and node.id in params:
                typed[node] = params[node.id]
    return typed


def _private_crossings(module: str, source: str, owners: dict[str, set[str]]) -> list[str]:
    """Where ``module`` (its ``source`` text) reaches a ``_name`` of another package.
    Exact where the source is known: a ``_name`` imported from another package's module,
    read off a module of another package imported under a name, or read off a parameter
    annotated with another package's class.  Otherwise (an attribute of some object) by
    name: a ``_name`` that only other packages define."""
    package = layer_of(module)
    tree = ast.parse(source)
    crossings: list[str] = []
    modules: dict[str, str] = {}  # a name bound to a module of another package -> it
    foreign: dict[str, str] = {}  # a name bound to another package's class (or function)
    for bound, name, origin, line in _imported_from(module, tree):
        if layer_of(origin) == package:
            continue
        if name.startswith("_") and not name.startswith("__"):
            crossings.append(f"{module}:{line} {name} (from {origin})")
        elif f"{origin}.{name}" in MODULE_NAMES:
            modules[bound] = f"{origin}.{name}"
        else:
            foreign[bound] = origin
    typed = _typed_as_foreign(tree, foreign)
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            continue
        where = f"{module}:{node.lineno} {node.attr}"
        value = node.value
        if isinstance(value, ast.Name) and value.id in {"self", "cls"}:
            continue  # the class's own
        if isinstance(value, ast.Name) and value.id in modules:
            crossings.append(f"{where} (of {modules[value.id]})")
            continue
        if value in typed:
            crossings.append(f"{where} (of a {typed[value]} object)")
            continue
        owned_by = owners.get(node.attr, set())
        if owned_by and package not in owned_by:
            crossings.append(f"{where} ({sorted(owned_by)})")
    return crossings


def test_no_private_member_is_reached_across_packages() -> None:
    """A package uses another's public names only: a ``_name`` imported from another
    package, read off another package's module, or read off an object when only other
    packages define that name, is a layer crossed through a private door."""
    owners = _private_definitions()
    crossings = [
        crossing
        for path in MODULES
        for crossing in _private_crossings(
            module_name(path), path.read_text(encoding="utf-8"), owners
        )
    ]
    assert not crossings, "private members reached across packages:\n  " + "\n  ".join(crossings)


def test_the_private_member_check_sees_a_module_reached_through() -> None:
    """The exact half of the check above: a name the reaching package defines too is
    still a crossing when it is imported from, or read off a module of, another package,
    or read off a parameter typed as another package's class."""
    owners = {"_shared": {"server", "gateway"}}
    source = (
        "from ..server import handlers\n"
        "from ..server.handlers import _shared\n"
        "from ..server.server import Server\n"
        "value = handlers._shared\n"
        "def reload(server: Server | None, other: object) -> None:\n"
        "    server._shared, other._shared\n"
    )
    crossings = _private_crossings("mcpkit.gateway.probe", source, owners)
    assert [c.split(" ", 1)[1] for c in crossings] == [
        "_shared (from mcpkit.server.handlers)",
        "_shared (of mcpkit.server.handlers)",
        "_shared (of a mcpkit.server.server object)",
    ]


# --------------------------------------------------------------------------- public API

PUBLIC_API = {
    "Audio",
    "Context",
    "EmbeddedResource",
    "Image",
    "McpError",
    "ResourceLink",
    "Server",
    "Text",
    "ToolError",
    "ToolResult",
    "__version__",
}


def test_all_is_exactly_the_documented_set() -> None:
    assert len(mcpkit.__all__) == len(set(mcpkit.__all__)), "duplicates in __all__"
    assert set(mcpkit.__all__) == PUBLIC_API


@pytest.mark.parametrize("name", sorted(PUBLIC_API))
def test_every_public_name_resolves(name: str) -> None:
    value = getattr(mcpkit, name)
    assert value is not None
    if name == "__version__":
        assert isinstance(value, str) and value.count(".") >= 1
    else:
        assert getattr(value, "__name__", name) == name
        assert value.__module__.startswith("mcpkit.")


def test_no_other_public_objects_at_the_top_level() -> None:
    extra = {
        name
        for name, value in vars(mcpkit).items()
        if not name.startswith("_") and not isinstance(value, pytypes.ModuleType)
    }
    assert extra <= PUBLIC_API, f"public but not in __all__: {sorted(extra - PUBLIC_API)}"


def test_star_import_gives_the_public_api() -> None:
    namespace: dict[str, object] = {}
    exec("from mcpkit import *", namespace)
    assert set(namespace) - {"__builtins__"} == PUBLIC_API


def test_mcp_error_is_the_types_error() -> None:
    assert mcpkit.McpError is importlib.import_module("mcpkit.types.errors").McpError


# --------------------------------------------------------------------------- import cost

_PROBE = """
import json, sys
import mcpkit
from mcpkit import Server
heavy = ("uvicorn", "httpx", "httpcore", "cryptography", "starlette", "jsonschema", "asyncio")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)))
"""


def test_import_mcpkit_does_not_import_the_heavy_stacks() -> None:
    """Nor asyncio: a stdio server's cold start pays for it only once a loop runs."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
