"""The first ten minutes of a new user, from the built wheel in a fresh virtualenv.

Each test types what the README and ``--help`` suggest, in a new terminal where the venv
was never activated (``Env.run(..., new_shell=True)``: the venv's programs are called by
their path and nothing of ours is on PATH), and checks what the person sees.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
from pathlib import Path

import pytest
from installkit import REPO, Env, make_env

from support.servers import free_port, kill_group, spawn, wait_port
from support.waits import eventually

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INIT_LINE = json.dumps(INITIALIZE) + "\n"


def _package(env: Env) -> Path:
    """``proj/pkg/mod.py`` holding the quick-start server; returns ``proj``."""
    project = env.work / "proj"
    (project / "pkg").mkdir(parents=True, exist_ok=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "mod.py").write_text((REPO / "examples" / "quickstart.py").read_text())
    return project


def _server_name(stdout: str) -> str:
    answer = json.loads(stdout.splitlines()[0])
    name: str = answer["result"]["serverInfo"]["name"]
    return name


# ------------------------------------------------------------------ module targets


def test_serve_a_module_from_the_folder_that_holds_its_package(base: Env) -> None:
    project = _package(base)
    done = base.run("mcpkit", "serve", "pkg.mod:server", stdin=INIT_LINE, cwd=project)
    assert done.returncode == 0, done.stderr
    assert _server_name(done.stdout) == "quickstart"


def test_install_a_module_writes_a_command_that_works_from_anywhere(base: Env) -> None:
    project = _package(base)
    done = base.run("mcpkit", "install", "json", "pkg.mod:server", cwd=project, new_shell=True)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["quickstart"]
    elsewhere = base.work / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    launched = base.run(
        entry["command"],
        *entry["args"],
        stdin=INIT_LINE,
        cwd=elsewhere,
        new_shell=True,
        env=entry.get("env"),
    )
    assert launched.returncode == 0, launched.stderr
    assert _server_name(launched.stdout) == "quickstart"


# ------------------------------------------------------------------ the banner


def test_the_serving_banner_names_a_command_that_works_in_a_new_shell(base: Env) -> None:
    port = free_port()
    with base.background(
        "mcpkit", "serve", "quickstart.py", "--http", "--port", str(port), new_shell=True, port=port
    ):
        banner = base.log_of(port).read_text()
        (hint,) = [line for line in banner.splitlines() if "try:" in line]
        command = hint.split("try:", 1)[1].split("(")[0].strip()
        tried = base.run("/bin/sh", "-c", command, new_shell=True)  # as typed in a new shell
    assert tried.returncode == 0, banner + tried.stderr
    assert "add(a: number, b: number)" in tried.stdout


def test_log_format_json_makes_the_banner_json_too(base: Env) -> None:
    port = free_port()
    with base.background(
        "mcpkit",
        "serve",
        "quickstart.py",
        "--http",
        "--port",
        str(port),
        "--log-format",
        "json",
        port=port,
    ):
        lines = [line for line in base.log_of(port).read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert any(f"127.0.0.1:{port}/mcp" in record["message"] for record in records), lines


def test_a_busy_port_fails_before_announcing_anything(base: Env) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = base.run("mcpkit", "serve", "quickstart.py", "--http", "--port", str(port))
    assert done.returncode == 3, done.stderr
    assert "serving" not in done.stderr
    assert done.stderr.startswith("mcpkit serve: ") and str(port) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# ------------------------------------------------------------------ errors in the user's file

BROKEN = {
    "import": "from mcpkit import Server\n\nserver = Server('oops', '1')\n\n"
    "def helper():\n    return undefined_name\n\nhelper()\n",
    "syntax": "from mcpkit import Server\n\nserver = Server('oops', '1'\n",
}


@pytest.mark.parametrize("command", ["serve", "list"])
@pytest.mark.parametrize("kind", list(BROKEN))
def test_an_error_in_the_users_file_is_one_line_and_its_frames(
    base: Env, command: str, kind: str
) -> None:
    (base.work / "broken.py").write_text(BROKEN[kind])
    done = base.run("mcpkit", command, "broken.py", new_shell=True)
    assert done.returncode != 0
    err = done.stderr
    assert err.startswith(f"mcpkit {command}: "), err
    assert "broken.py" in err.splitlines()[0]
    assert f'{base.work / "broken.py"}", line' in err, err
    assert "site-packages/mcpkit" not in err and "<frozen" not in err, err
    assert len(err.strip().splitlines()) <= 8, err


# ------------------------------------------------------------------ usage errors

USAGE_ERRORS = [
    ("call", ["quickstart.py", "add", "a=1"]),  # a missing argument
    ("call", ["quickstart.py", "add", "a=1", "b=2", "c=3"]),  # an extra one
    ("call", []),
    ("list", ["--timeout", "soon", "quickstart.py"]),
    ("serve", []),
    ("serve", ["quickstart.py", "--port", "x"]),
    ("install", ["nowhere-app", "quickstart.py"]),
]


@pytest.mark.parametrize(("command", "words"), USAGE_ERRORS)
def test_usage_errors_have_one_prefix_and_exit_2(base: Env, command: str, words: list[str]) -> None:
    done = base.run("mcpkit", command, *words, new_shell=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"mcpkit {command}: "), done.stderr
    assert "Traceback" not in done.stderr


def test_mcpkit_alone_prints_the_help(base: Env) -> None:
    done = base.run("mcpkit", new_shell=True)
    assert done.returncode in (0, 2)
    shown = done.stdout + done.stderr
    assert "usage: mcpkit" in shown and "examples:" in shown and "serve" in shown
    assert "error:" not in shown  # not argparse's "the following arguments are required"


# ------------------------------------------------------------------ URLs


def test_a_url_without_the_mcp_path_gets_a_hint(base: Env) -> None:
    port = free_port()
    with base.background(
        "mcpkit", "serve", "quickstart.py", "--http", "--port", str(port), port=port
    ) as url:
        done = base.run("mcpkit", "list", url + "/", new_shell=True)
    assert done.returncode != 0
    assert f"{url}/mcp" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_plain_web_page_is_named_not_dumped(base: Env) -> None:
    port = free_port()
    (base.work / "index.html").write_text("<!doctype html><html><body>hello</body></html>")
    with base.background(
        "python", "-m", "http.server", str(port), "--bind", "127.0.0.1", port=port
    ) as url:
        done = base.run("mcpkit", "list", url + "/", new_shell=True)
    assert done.returncode == 3, done.stderr
    assert "text/html" in done.stderr and "<" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_an_unsupported_url_scheme_says_so(base: Env) -> None:
    done = base.run("mcpkit", "list", "ftp://example.com/mcp", new_shell=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("mcpkit list: unsupported URL scheme 'ftp'"), done.stderr


# ------------------------------------------------------------------ a closed pipe


@pytest.mark.parametrize("unbuffered", [True, False])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_pipe_ends_the_same_for_text_and_json(
    base: Env, as_json: bool, unbuffered: bool
) -> None:
    many = "".join(
        f"@server.tool\ndef tool_{i}(text: str) -> str:\n    '''Tool {i}, {'x' * 80}'''\n"
        "    return text\n"
        for i in range(2000)  # far more than a pipe holds
    )
    (base.work / "many.py").write_text(
        f"from mcpkit import Server\nserver = Server('many', '1')\n{many}"
    )
    env = base.shell_env
    if not unbuffered:
        env.pop("PYTHONUNBUFFERED")
    proc = subprocess.Popen(
        [str(base.bin / "mcpkit"), "list", "many.py", *(["--json"] if as_json else [])],
        cwd=base.work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141
    assert err == ""


# ------------------------------------------------------------------ mcpkit dev


@pytest.fixture(scope="module")
def cli_env(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Env:
    return make_env(tmp_path_factory.mktemp("cli"), dist["wheel"], "cli")


def test_dev_shows_the_users_error_and_no_watchfiles_noise(cli_env: Env) -> None:
    server = cli_env.work / "devserver.py"
    server.write_text(BROKEN["import"])
    port = free_port()
    log = cli_env.log_of(port)
    argv = [str(cli_env.bin / "mcpkit"), "dev", "devserver.py", "--port", str(port)]
    proc = spawn(argv, log, env=cli_env.shell_env, inherit_env=False, cwd=cli_env.work)
    try:
        eventually(lambda: "undefined_name" in log.read_text(), 60, "the user's error")
        server.write_text(BROKEN["import"].replace("helper()\n", "helper\n"))  # fixed
        wait_port(port, proc, log, timeout=60)
        text = log.read_text()  # what the person saw until the fixed file served
    finally:
        kill_group(proc)
    assert "process already dead" not in text, text
    assert "site-packages/mcpkit" not in text and "<frozen" not in text, text


# ------------------------------------------------------------------ what the docs say


def test_the_readme_says_how_to_reach_mcpkit_after_make_run() -> None:
    readme = (REPO / "README.md").read_text()
    first_steps = readme[readme.index("## Two commands") : readme.index("## Documentation")]
    assert ".venv/bin/mcpkit" in first_steps and ".venv/bin/activate" in first_steps


def test_make_run_prints_a_command_that_works_in_a_new_shell(base: Env) -> None:
    """``make run`` serves with ``.venv/bin/mcpkit``: the banner must not say a bare
    ``mcpkit`` that a new shell cannot find."""
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile[makefile.index("\nrun:") :].split("\n\n")[0]
    assert "$(BIN)/mcpkit serve" in recipe
    port = free_port()
    relative = Path("venv") / "bin" / "mcpkit"  # typed as make does, relative to its folder
    argv = [str(relative), "serve", "work/quickstart.py", "--http", "--port", str(port)]
    log = base.root / f"make-run-{port}.log"
    proc = spawn(argv, log, env=base.shell_env, inherit_env=False, cwd=base.root)
    try:
        wait_port(port, proc, log, timeout=60)
        (hint,) = [line for line in log.read_text().splitlines() if "try:" in line]
        command = shlex.split(hint.split("try:", 1)[1].split("(")[0])
        tried = base.run(*command, cwd=base.root, new_shell=True)
    finally:
        kill_group(proc)
    assert command[0] == str(relative), hint
    assert tried.returncode == 0, tried.stderr


def test_publish_validates_with_the_schema_the_wheel_ships(base: Env) -> None:
    done = base.run(
        "mcpkit",
        "publish",
        "quickstart.py",
        "--dry-run",
        "--name",
        "io.github.example/quickstart",
        "--remote",
        "https://example.com/mcp",
        new_shell=True,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((base.work / "server.json").read_text())
    assert entry["$schema"].endswith("/2025-09-29/server.schema.json")
