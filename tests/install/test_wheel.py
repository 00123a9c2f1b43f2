"""The package as users install it: a wheel, in a fresh virtualenv, with no extras.

A bare ``pip install mcpkit`` was broken for a whole release (``sniffio`` was imported but
not declared; the test extras happened to bring it) and no test noticed, because every
test ran in the development environment.  Here the wheel and sdist are built from this
checkout, the wheel is installed into fresh virtualenvs (no extras, then each extra
alone), and the README's first steps run from there as subprocesses, in a folder outside
the checkout so that nothing but the installed package can be imported.

Slow (a few virtualenvs); needs the package index that ``pip`` is configured with.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from installkit import REPO, Env, make_env, pip_install

from support.servers import free_port

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

pytestmark = pytest.mark.slow

# --------------------------------------------------------------------------- metadata


def test_metadata_renders_and_the_wheel_ships_what_it_should(dist: dict[str, Path]) -> None:
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "check",
            "--strict",
            str(dist["wheel"]),
            str(dist["sdist"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = wheel.namelist()
        (metadata_name,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(metadata_name).decode()
    assert "mcpkit/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    assert "Requires-Dist: sniffio" in metadata
    for extra in (*PYPROJECT["project"]["optional-dependencies"],):
        assert f"Provides-Extra: {extra}" in metadata
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


def test_the_all_extra_is_every_optional_feature() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    features = set().union(
        *(set(v) for k, v in extras.items() if k not in ("all", "dev", "testing", "bench", "docs"))
    )
    assert set(extras["all"]) == features


def test_every_third_party_import_is_declared() -> None:
    """Static half of the check: each module ``src/mcpkit`` imports from outside the
    standard library is a base dependency or belongs to a declared extra."""
    import ast

    from mcpkit.types.extras import EXTRAS

    declared = {
        "anyio",
        "sniffio",
        "typing_extensions",
        "certifi",
        "httpcore",
        "orjson",
        "docstring_parser",
        "pydantic",
        "httpx",
        "httpx_sse",
        "uvicorn",
        "h11",
        "cryptography",
        "jsonschema",
        "referencing",
        "platformdirs",
    }
    base_names = {
        dep.split(">")[0].split("=")[0].split(";")[0].strip().replace("-", "_")
        for dep in PYPROJECT["project"]["dependencies"]
    }
    assert declared == base_names, "update this list with pyproject's dependencies"
    optional = {module for modules in EXTRAS.values() for module in modules}
    found: set[str] = set()
    for path in (REPO / "src" / "mcpkit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    third_party = found - set(sys.stdlib_module_names) - {"mcpkit"}
    assert third_party <= declared | optional, third_party - declared - optional


# --------------------------------------------------------------------------- no extras


def test_base_install_imports_the_public_api_from_the_venv(base: Env) -> None:
    done = base.run(
        "python",
        "-c",
        "import mcpkit, mcpkit.client, mcpkit.server, sys;"
        "print(mcpkit.__file__); print(mcpkit.Server.__name__)",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(base.root / "venv")), done.stdout
    version = base.mcpkit("--version")
    assert version.returncode == 0 and version.stdout.startswith("mcpkit ")


def test_base_install_imports_every_module_or_names_the_extra(base: Env) -> None:
    """Dynamic half: every module of the installed package imports, or fails only for a
    module that a declared extra provides."""
    script = """
import importlib, json, pkgutil, mcpkit
from mcpkit.types.extras import EXTRAS
optional = {m for ms in EXTRAS.values() for m in ms}
bad = {}
for info in pkgutil.walk_packages(mcpkit.__path__, "mcpkit."):
    if info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in optional:
            bad[info.name] = repr(exc)
print(json.dumps(bad))
"""
    done = base.run("python", "-c", script)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def _stdio_exchange(env: Env, lines: list[dict[str, object]]) -> list[dict[str, Any]]:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    done = env.run("mcpkit", "serve", "quickstart.py", stdin=text)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_stdio_discover_and_initialize(base: Env) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern = _stdio_exchange(
        base, [{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}]
    )
    assert "2026-07-28" in modern[0]["result"]["supportedVersions"]
    legacy = _stdio_exchange(
        base,
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ],
    )
    result = legacy[0]["result"]
    assert result["serverInfo"]["name"] == "quickstart"
    assert result["protocolVersion"] == "2025-11-25"


def test_list_and_call_over_stdio_and_http(base: Env) -> None:
    listed = base.mcpkit("list", "quickstart.py")
    assert listed.returncode == 0, listed.stderr
    assert "add(a: number, b: number)" in listed.stdout
    called = base.mcpkit("call", "quickstart.py", "add", "a=1", "b=2", "--json")
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["structuredContent"]["sum"] == 3
    port = free_port()
    with base.background(
        "mcpkit", "serve", "quickstart.py", "--http", "--port", str(port), port=port
    ) as url:
        listed = base.mcpkit("list", f"{url}/mcp", "--json")
        assert listed.returncode == 0, listed.stderr
        assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == {"add", "echo", "greet"}
        called = base.mcpkit("call", f"{url}/mcp", "echo", "text=hi")
        assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    # the embedded SQLite default, in the per-user data directory; nothing in the folder
    assert (base.data / "mcpkit" / "servers" / "quickstart" / "state.db").exists()
    assert not (base.work / ".mcpkit").exists()


def test_python_client_in_the_base_install(base: Env) -> None:
    script = """
import anyio
from mcpkit.client import Client
async def main():
    async with Client("quickstart.py") as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        print(result["structuredContent"]["sum"])
anyio.run(main)
"""
    done = base.run("python", "-c", script)
    assert (done.returncode, done.stdout.strip()) == (0, "5.0"), done.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("gateway", "gw.toml"), "gateway"),
        (("host", "--web"), "host"),
        (("serve", "quickstart.py", "--http", "--state", "redis://127.0.0.1:1/0"), "redis"),
        (("serve", "quickstart.py", "--http", "--auth-issuer", "http://127.0.0.1:1"), "auth"),
        (("dev", "quickstart.py"), "cli"),
    ],
)
def test_a_missing_extra_is_named_in_one_line(base: Env, args: tuple[str, ...], extra: str) -> None:
    (base.work / "gw.toml").write_text(
        '[[upstream]]\nname = "demo"\ncommand = "mcpkit serve quickstart.py"\n'
    )
    done = base.mcpkit(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'mcpkit[{extra}]'" in lines[0]


# --------------------------------------------------------------------------- each extra alone


def test_extra_redis_serves_on_a_real_redis(
    dist: dict[str, Path], tmp_path: Path, redis_url: str
) -> None:
    env = make_env(tmp_path, dist["wheel"], "redis")
    port = free_port()
    with env.background(
        "mcpkit",
        "serve",
        "quickstart.py",
        "--http",
        "--port",
        str(port),
        "--state",
        redis_url,
        port=port,
    ) as url:
        called = env.mcpkit("call", f"{url}/mcp", "add", "a=1", "b=1", "--json")
        assert called.returncode == 0, called.stderr
    keys = env.run(
        "python",
        "-c",
        f"import redis; print(len(redis.Redis.from_url({redis_url!r}).keys('mcpkit:*')))",
    )
    assert keys.returncode == 0 and int(keys.stdout) > 0, keys.stderr  # the keyring lives there


def test_extra_gateway_fronts_an_upstream(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "gateway")
    (env.work / "gw.toml").write_text(
        '[gateway]\nmetrics = true\n[[upstream]]\nname = "demo"\n'
        'command = "mcpkit serve quickstart.py"\nprefix = "demo_"\n'
    )
    port = free_port()
    with env.background(
        "mcpkit", "gateway", "gw.toml", "--port", str(port), port=port, path="/metrics"
    ) as url:
        called = env.mcpkit("call", f"{url}/mcp", "demo_add", "a=2", "b=2", "--json")
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["structuredContent"]["sum"] == 4
        assert "mcp_gateway_requests_total" in httpx.get(f"{url}/metrics").text


def test_extra_host_serves_its_page(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "host")
    (env.work / "host.json").write_text(
        json.dumps(
            {"mcpServers": {"qs": {"command": "mcpkit", "args": ["serve", "quickstart.py"]}}}
        )
    )
    port = free_port()
    with env.background(
        "mcpkit", "host", "--web", "--config", "host.json", "--port", str(port), port=port
    ) as url:
        page = httpx.get(url + "/")
        assert page.status_code in (200, 401, 403)  # the page wants its per-launch token
        log = next(env.work.glob("bg-*.log")).read_text()
        token_url = next(word for word in log.split() if word.startswith(url))
        assert httpx.get(token_url).status_code == 200


def test_extra_auth_protects_the_endpoint(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "auth")
    port = free_port()
    with env.background(
        "mcpkit",
        "serve",
        "quickstart.py",
        "--http",
        "--port",
        str(port),
        "--auth-issuer",
        "http://127.0.0.1:9",
        "--auth-jwks",
        "http://127.0.0.1:9/jwks",
        port=port,
    ) as url:
        denied = httpx.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert denied.status_code == 401
        assert "resource_metadata=" in denied.headers["www-authenticate"]
        metadata = httpx.get(f"{url}/.well-known/oauth-protected-resource/mcp").json()
        assert metadata["authorization_servers"] == ["http://127.0.0.1:9"]


def test_extra_fast_serves_on_uvloop_and_httptools(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "fast")
    done = env.run(
        "python",
        "-c",
        "import uvloop, httptools;"
        "from mcpkit.transports.http.server import protocol_classes;"
        "print(sorted(protocol_classes()))",
    )
    assert done.returncode == 0 and "httptools" in done.stdout, done.stdout + done.stderr
    port = free_port()
    with env.background(
        "mcpkit", "serve", "quickstart.py", "--http", "--port", str(port), port=port
    ) as url:
        called = env.mcpkit("call", f"{url}/mcp", "echo", "text=fast")
        assert called.stdout == "fast\n", called.stderr


def test_extra_cli_runs_dev_with_reload(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "cli")
    port = free_port()
    with env.background("mcpkit", "dev", "quickstart.py", "--port", str(port), port=port) as url:
        called = env.mcpkit("call", f"{url}/mcp", "echo", "text=dev")
        assert called.stdout == "dev\n", called.stderr


def test_extra_serverless_answers_through_the_lambda_handler(
    dist: dict[str, Path], tmp_path: Path
) -> None:
    env = make_env(tmp_path, dist["wheel"], "serverless")
    script = """
import json, os
os.environ["MCPKIT_SEALING_KEYS"] = "a secret every instance shares"
from mcpkit.serverless import lambda_handler
from quickstart import server
handler = lambda_handler(server)
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "lambda"}, "_meta": meta}}
event = {"version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
         "headers": {"host": "abc.lambda-url.us-east-1.on.aws",
                     "content-type": "application/json",
                     "accept": "application/json, text/event-stream",
                     "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                     "mcp-name": "echo"},
         "requestContext": {"http": {"method": "POST", "path": "/mcp", "sourceIp": "1.2.3.4",
                                     "protocol": "HTTP/1.1", "userAgent": "t"},
                            "domainName": "abc.lambda-url.us-east-1.on.aws",
                            "accountId": "1", "apiId": "abc", "requestId": "r",
                            "stage": "$default", "time": "now", "timeEpoch": 0},
         "body": json.dumps(body), "isBase64Encoded": False}
answer = handler(event, None)
print(json.loads(answer["body"])["result"]["content"][0]["text"])
"""
    done = env.run("python", "-c", script)
    assert (done.returncode, done.stdout.strip()) == (0, "lambda"), done.stderr[-3000:]


def test_extra_all_brings_every_optional_module(dist: dict[str, Path], tmp_path: Path) -> None:
    env = make_env(tmp_path, dist["wheel"], "all")
    done = env.run(
        "python",
        "-c",
        "import importlib; from mcpkit.types.extras import EXTRAS;"
        "[importlib.import_module(m) for k, ms in EXTRAS.items() for m in ms"
        " if k != 'testing']",
    )
    assert done.returncode == 0, done.stderr


def test_sdist_builds_a_working_wheel(dist: dict[str, Path], tmp_path: Path) -> None:
    """The source distribution is complete: pip builds and installs from it."""
    env = Env(tmp_path)
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    pip_install(env, str(dist["sdist"]))
    listed = env.mcpkit("list", "quickstart.py", "--json")
    assert listed.returncode == 0, listed.stderr
    with tarfile.open(dist["sdist"]) as archive:
        names = archive.getnames()
    assert any(n.endswith("tests/install/test_wheel.py") for n in names)
    assert any(n.endswith("examples/quickstart.py") for n in names)
