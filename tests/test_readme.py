"""Every code block of the README and of the documentation site (``docs/**/*.md``) runs,
so neither the front page nor the manual can drift from the code.

Each fenced block is preceded by a ``<!-- readme-test: ... -->`` comment saying how:

* ``write FILE``: a Python file the later blocks use (``demo.py``); it must import cleanly.
* ``run``: a Python script, run with this interpreter; it must exit 0.
* ``shell``: a bash block of commands that end; each must succeed (``set -e -o pipefail``).
* ``shell with-server FILE PORT``: the same, while ``mcpkit serve FILE --http`` listens.
* ``serve PORT [PORT...]; redis PORT``: long-running servers, one per line; each PORT must
  answer HTTP, then they are stopped.  A Redis port starts a real ``redis-server``.
* ``pip``: install commands, run with a fresh virtualenv's pip.
* ``gateway-config``: a gateway TOML file that must load.
* ``fails TEXT``: a command that must fail with one clear line containing TEXT.
* ``pytest FILE``: a test module, written to FILE and run with pytest; it must pass.
* ``skip: REASON``: a block that cannot run inside the test suite; the reason names what
  covers it instead.

A page without code needs no marker; a page with a code block that has none fails
:func:`test_every_code_block_says_how_it_is_tested`, naming the page.  ``write`` blocks of
every page land in the one scratch folder, so their file names are unique across pages.

Blocks run in a scratch folder (``examples`` and ``tests`` linked in, HOME pointing inside
it); ports are replaced with free ones; commands resolve to this interpreter's venv.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from support.servers import free_port, kill_group, redis_server, spawn, tail

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
#: The README first, then every page of the site, in a stable order.
DOCUMENTS = [README, *sorted(DOCS.rglob("*.md"))]
_BLOCK = re.compile(r"<!-- readme-test: (?P<how>.*?) -->\n```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
KINDS = ("write", "run", "shell", "serve", "pip", "gateway-config", "fails", "pytest", "skip:")


@dataclass(frozen=True)
class Block:
    document: str  # relative to the repository: README.md, docs/guides/server.md
    line: int
    how: str
    lang: str
    body: str

    @property
    def kind(self) -> str:
        return self.how.split()[0]

    @property
    def slug(self) -> str:
        """A file-name-safe tag for what this block leaves in the scratch folder."""
        return f"{re.sub(r'[^A-Za-z0-9]+', '_', self.document)}_{self.line}"


def _name(document: Path) -> str:
    return document.relative_to(REPO).as_posix()


def blocks_of(document: Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    return [
        Block(
            _name(document),
            text[: m.start()].count("\n") + 2,
            m["how"].strip(),
            m["lang"],
            m["body"],
        )
        for m in _BLOCK.finditer(text)
    ]


def blocks() -> list[Block]:
    return [block for document in DOCUMENTS for block in blocks_of(document)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_every_code_block_says_how_it_is_tested(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    fences = len(re.findall(r"^```\w", text, re.M))
    found = blocks_of(document)
    assert len(found) == fences, (
        f"{_name(document)}: a ```block without a <!-- readme-test: ... --> line"
    )
    assert all(block.kind in KINDS for block in found), [b.how for b in found]


def test_the_site_pages_are_read() -> None:
    """Guard against a glob that silently finds no page: the site has tested blocks."""
    in_docs = [b for b in blocks() if b.document.startswith("docs/")]
    assert len(DOCUMENTS) > 1 and in_docs


def test_written_files_have_one_author() -> None:
    """Two pages writing ``demo.py`` differently would make later blocks depend on order."""
    written: dict[str, Block] = {}
    for block in blocks():
        if block.kind == "write":
            name = block.how.split()[1]
            first = written.setdefault(name, block)
            assert first.body == block.body, (
                f"{name} written by {first.document}:{first.line} and {block.document}:{block.line}"
            )


# --------------------------------------------------------------------------- the scratch folder


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    for name in ("examples", "tests"):
        (root / name).symlink_to(REPO / name)
    (root / "home").mkdir()
    (root.parent / f"{root.name}-logs").mkdir()  # outside: `mcpkit dev` watches the folder
    for block in blocks():
        if block.kind == "write":
            (root / block.how.split()[1]).write_text(block.body, encoding="utf-8")
    return root


def _env(scratch: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(scratch / "home")
    env["PYTHONPATH"] = str(scratch)  # `from demo import server`
    env["MCPKIT_SEALING_KEYS"] = "readme-secret"  # what serverless mode asks for
    env.update(extra)
    return env


def _logs(scratch: Path) -> Path:
    return scratch.parent / f"{scratch.name}-logs"


def _bash(
    body: str, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", body],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


@contextlib.contextmanager
def _background(
    commands: list[str], cwd: Path, env: dict[str, str], ports: list[int], log: Path
) -> Iterator[None]:
    procs = [
        spawn(
            ["bash", "-c", f"exec {command}"],
            log,
            env=env,
            inherit_env=False,
            cwd=cwd,
            append=index > 0,
        )
        for index, command in enumerate(commands)
    ]
    try:
        for port in ports:
            deadline = time.monotonic() + 180  # `make run` may first install into .venv
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(f"http://127.0.0.1:{port}/", timeout=1.0)
                    break
                dead = [p.args for p in procs if p.poll() is not None]
                assert not dead and time.monotonic() < deadline, (
                    f"port {port} never answered ({dead} exited):\n{tail(log)}"
                )
                time.sleep(0.2)
        yield
    finally:
        for proc in procs:
            kill_group(proc, grace=15)


def _free_ports(body: str, ports: list[str]) -> tuple[str, dict[str, int]]:
    mapping = {port: free_port() for port in ports}
    for old, new in mapping.items():
        body = re.sub(rf"(?<=[:\s=]){old}\b", str(new), body)
    return body, mapping


@contextlib.contextmanager
def _redis(port_in_text: str | None) -> Iterator[int | None]:
    if port_in_text is None:
        yield None
        return
    with redis_server() as port:
        yield port


# --------------------------------------------------------------------------- the blocks


def block_params() -> list[object]:
    """Every block; ``pip`` blocks (a fresh virtualenv installing the checkout, about a
    minute) are marked ``slow`` so that this file is scheduled among the first."""
    return [pytest.param(b, marks=pytest.mark.slow) if b.kind == "pip" else b for b in blocks()]


@pytest.mark.parametrize("block", block_params(), ids=lambda b: f"{b.document}:{b.line}-{b.kind}")
def test_readme_block(block: Block, scratch: Path) -> None:
    kind, rest = block.kind, block.how[len(block.kind) :].strip()
    if kind == "skip:":
        pytest.skip(rest)
    if kind == "write":
        done = subprocess.run(
            [sys.executable, "-c", f"import runpy; runpy.run_path({rest!r})"],
            cwd=scratch,
            env=_env(scratch),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    elif kind == "run":
        script = scratch / f"snippet_{block.slug}.py"
        script.write_text(block.body, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=scratch,
            env=_env(scratch),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    elif kind == "shell":
        _shell(block, rest, scratch)
    elif kind == "serve":
        _serve(block, rest, scratch)
    elif kind == "pip":
        _pip(block, scratch)
    elif kind == "gateway-config":
        from mcpkit.gateway.config import load_config

        path = scratch / f"gateway_{block.slug}.toml"
        path.write_text(block.body, encoding="utf-8")
        config = load_config(str(path))
        assert config.upstreams
    elif kind == "pytest":
        test_file = scratch / rest
        test_file.write_text(block.body, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
            cwd=scratch,
            env=_env(scratch),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    elif kind == "fails":
        done = _bash(block.body, scratch, _env(scratch))
        assert done.returncode != 0
        assert rest in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def _shell(block: Block, rest: str, scratch: Path) -> None:
    body, words = block.body, rest.split()
    if words[:1] == ["with-server"]:
        target, port = words[1], words[2]
        body, ports = _free_ports(body, [port])
        command = f"mcpkit serve {target} --http --port {ports[port]} --state memory:"
        with _background(
            [command],
            scratch,
            _env(scratch),
            [ports[port]],
            _logs(scratch) / f"server_{block.slug}.log",
        ):
            done = _bash(body, scratch, _env(scratch))
    else:
        done = _bash(body, scratch, _env(scratch))
    assert done.returncode == 0, done.stdout + done.stderr


def _serve(block: Block, rest: str, scratch: Path) -> None:
    ports_part, _, redis_part = rest.partition(";")
    ports = ports_part.split()
    redis_words = redis_part.split()
    with _redis(redis_words[1] if redis_words[:1] == ["redis"] else None) as redis_port:
        body, mapping = _free_ports(block.body, ports)
        if redis_port is not None:
            body = body.replace(f"127.0.0.1:{redis_words[1]}", f"127.0.0.1:{redis_port}")
        commands = [
            line.split(" #")[0].strip()
            for line in body.splitlines()
            if line.strip() and not line.startswith("#")
        ]
        in_repo = any(c.startswith("make ") for c in commands)
        env = _env(scratch, PORT=str(mapping[ports[0]]))
        with _background(
            commands,
            REPO if in_repo else scratch,
            env,
            list(mapping.values()),
            _logs(scratch) / f"serve_{block.slug}.log",
        ):
            pass


def _pip(block: Block, scratch: Path) -> None:
    target = scratch / "pip-venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    env = _env(scratch)
    env["PATH"] = f"{target / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    env.pop("PYTHONPATH")
    body = block.body.replace("pip install ", "pip install --quiet --disable-pip-version-check ")
    done = _bash(body, REPO, env, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    check = subprocess.run(
        [str(target / "bin" / "mcpkit"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0 and check.stdout.startswith("mcpkit "), check.stderr
