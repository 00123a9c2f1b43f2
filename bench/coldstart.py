"""The Lambda cold start: a fresh process, from ``import`` to the first ``tools/call`` answered.

Each round starts ``bench/peers/coldstart_driver.py`` once per contender, alternating, in
the contender's own interpreter (mcpkit: this venv, serving ``examples/serverless/``; the
SDK and FastMCP: the peers' venv, with mangum), pinned to the server core.  The driver
imports the framework and the server, builds the Lambda handler (Mangum around the ASGI
app for every contender), calls it once with a function URL event and checks the answer.

Two figures per contender, medians over the rounds:

* **import to first answer**, timed inside the process from the driver's first line: what
  the issue's target (<= 150 ms, <= 1/5 of the SDK's) is about, and what a Lambda "Init
  duration" plus the first invocation's duration add up to, minus the runtime's own start;
* **process start to exit**, timed by this process around the whole subprocess: adds the
  interpreter's start-up and shutdown, the same for every contender on one Python.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time

from .contenders import OURS, PEERS_DIR, SDK, _pin
from .record import Run

DRIVER = PEERS_DIR / "coldstart_driver.py"
FIRST_ANSWER = "Lambda cold start: import to first tools/call answered"
WHOLE_PROCESS = "Lambda cold start: process start to exit"
TARGET_MS = 150.0


def _has_mangum(python: str) -> bool:
    done = subprocess.run([python, "-c", "import mangum"], capture_output=True, timeout=120)
    return done.returncode == 0


def _compile_bytecode(python: str) -> None:
    """Write mcpkit's and the example's bytecode first, as a deployment package has it
    (``pip install --target`` compiles; the peers' venv was compiled by pip too).  An
    editable checkout run with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile
    every module from source on every cold start: ~30 ms that no deployed function pays."""
    where = subprocess.run(
        [python, "-c", "import os, mcpkit; print(os.path.dirname(mcpkit.__file__))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()
    example = PEERS_DIR.parents[1] / "examples" / "serverless"
    subprocess.run(
        [python, "-m", "compileall", "-q", where, str(example)],
        capture_output=True,
        timeout=300,
        check=True,
    )


def bench_coldstart(ctx: Run) -> None:
    s = ctx.settings
    names = [n for n in ctx.live() if n in (OURS, SDK, "fastmcp")]
    for name in list(names):
        if not _has_mangum(ctx.contenders[name].python):
            fix = "pip install 'mcpkit[serverless]'" if name == OURS else "run --install-peers"
            ctx.note(f"coldstart: {name} skipped (no mangum in its venv: {fix})")
            names.remove(name)
    env = {**os.environ, "MCPKIT_SEALING_KEYS": "bench-coldstart-key"}
    if OURS in names:
        _compile_bytecode(ctx.contenders[OURS].python)
    first: dict[str, list[float]] = {}
    whole: dict[str, list[float]] = {}
    for _ in range(max(s.import_runs, 3)):
        for name in names:
            started = time.perf_counter()
            done = subprocess.run(
                [ctx.contenders[name].python, str(DRIVER), name],
                capture_output=True,
                text=True,
                cwd=str(PEERS_DIR),
                env=env,
                preexec_fn=_pin(s.server_cpu),
                timeout=120,
            )
            elapsed = time.perf_counter() - started
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                raise RuntimeError(f"cold start failed for {name}: {done.stderr[-800:]}")
            first.setdefault(name, []).append(json.loads(lines[-1])["first_call_s"])
            whole.setdefault(name, []).append(elapsed)
    for name in names:
        ctx.record(FIRST_ANSWER, name, statistics.median(first[name]) * 1000, "ms", higher=False)
        ctx.record(WHOLE_PROCESS, name, statistics.median(whole[name]) * 1000, "ms", higher=False)
    if OURS in first:
        ms = statistics.median(first[OURS]) * 1000
        verdict = "met" if ms <= TARGET_MS else "NOT met"
        ctx.note(
            f"coldstart: mcpkit import to first answer {ms:.0f} ms, target <= 150 ms: {verdict}"
        )
    ctx.progress("Lambda cold start")
