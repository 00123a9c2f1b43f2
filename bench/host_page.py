"""The host's page in headless Chromium (issue #35): how long the page takes to load, and
how long a reload takes to restore a long conversation with two MCP App views.

    python -m bench.host_page                    # 200 messages, 5 reloads; a table
    python -m bench.host_page --messages 40 --json out.json
    python -m bench --only host                  # the same, inside the bench's run

What runs, all real and on 127.0.0.1:

* ``mcpkit host --web`` as a person starts it, with ``examples/app_server.py`` (the dice
  App, trusted beforehand in a trust file of its own, ``permission: allow``) and the
  scripted model: its first two answers roll the dice (each call has a view), every later
  one echoes the message;
* the conversation is made through the page's own API: ``messages / 2`` chat turns (a
  person's message and the model's answer each), so the kept transcript is what a real
  chat leaves;
* Debian's Chromium through Playwright (``/usr/bin/chromium``, as the host tests use it)
  opens the page, then reloads it ``--rounds`` times.

Figures, medians over the rounds, each from the page's own clock (``performance.now()``,
from the navigation's start): ``load`` (the document's load event), ``restored`` (every
kept message drawn and both views initialized, i.e. sent their tool input and result
again).  The first open of the page is reported apart (a cold browser cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from .contenders import Proc

if TYPE_CHECKING:
    from .record import Run

REPO = Path(__file__).resolve().parents[1]
APP_SERVER = REPO / "examples" / "app_server.py"
CHROMIUM = "/usr/bin/chromium"
MESSAGES = 200
ROUNDS = 5
VIEWS = 2
#: True in the page once the kept transcript is drawn (``count`` person's messages) and
#: ``views`` App views answered ``ui/initialize``: the moment, from the navigation start.
RESTORED = """([count, views]) => {
  const drawn = document.querySelectorAll("#messages .msg.user").length >= count;
  const ready = typeof S === "object" && S.apps.filter((v) => v.initialized).length >= views;
  return drawn && ready ? performance.now() : 0;
}"""


def why_not() -> str | None:
    """Why this machine cannot run the measure, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


def script(turns: int) -> list[dict[str, Any]]:
    """The scripted model's steps: two turns that roll the dice, then echoes."""
    roll = {"name": "dice__roll_dice", "arguments": {"count": 3}}
    steps: list[dict[str, Any]] = []
    for i in range(min(VIEWS, turns)):
        steps += [{"text": f"Rolling ({i + 1}).", "tool_calls": [roll]}, {"text": "Rolled."}]
    return steps + [{"echo": True}] * max(0, turns - VIEWS)


def start_host(folder: Path, turns: int) -> tuple[Proc, str]:
    """``mcpkit host --web`` over the dice App, its data in ``folder``; (process, URL)."""
    from mcpkit.host import TrustStore, load_config

    config = folder / "host.json"
    dice = {"command": sys.executable, "args": [str(APP_SERVER)], "permission": "allow"}
    model = {"provider": "scripted", "script": script(turns)}
    config.write_text(json.dumps({"mcpServers": {"dice": dice}, "model": model}))
    trust = TrustStore(folder / "trusted.json", cwd=REPO)
    for server in load_config(config).servers:
        trust.trust(server)
    env = {
        **os.environ,
        "MCPKIT_TRUST_FILE": str(trust.path),
        "MCPKIT_HOST_DATA": str(folder / "data"),
        "MCPKIT_HOST_SETTINGS": str(folder / "settings.json"),
        "MCPKIT_TOKEN_FILE": str(folder / "tokens.json"),
        "MCPKIT_KEYRING": "off",
    }
    log = (folder / "host.log").open("wb")
    argv = [sys.executable, "-m", "mcpkit.cli.main", "host", "--web", "--config", str(config)]
    proc = Proc(argv, None, str(REPO), env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.popen.poll() is None:
        printed = (folder / "host.log").read_text(errors="replace")
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", printed)
        if found:
            return proc, found.group(1)
        time.sleep(0.1)
    proc.stop()
    raise RuntimeError("mcpkit host --web did not start: " + printed[-2000:])


def make_conversation(url: str, turns: int) -> dict[str, int]:
    """``turns`` chat turns through the page's API; what the kept transcript holds."""
    base, token = url.split("/?token=")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        _wait_ready(http)
        for i in range(turns):
            answer = http.post("/api/chat", json={"text": f"Message {i + 1}: what next?"})
            answer.raise_for_status()
        events = http.get("/api/conversations/current").json()["events"]
    kinds = [e.get("kind") for e in events]
    return {
        "user": kinds.count("user"),
        "assistant": kinds.count("assistant"),
        "views": sum(1 for e in events if e.get("kind") == "tool_result" and e.get("app")),
        "events": len(events),
    }


def _wait_ready(http: httpx.Client, timeout: float = 60.0) -> None:
    """Until every server of the host is up (the model's first call needs the dice)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        servers = http.get("/api/state").json()["servers"]
        if servers and all(s["state"] == "ready" for s in servers):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the host's servers did not start: {servers}")


def measure_page(url: str, kept: dict[str, int], rounds: int) -> dict[str, Any]:
    """Open the page once, then reload it ``rounds`` times; each time the load event and
    the restore, in ms from the navigation's start (page clock)."""
    from playwright.sync_api import sync_playwright

    wanted = [kept["user"], kept["views"]]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            page.goto(url)
            first = _timings(page, wanted)
            reloads = []
            for _ in range(rounds):
                page.reload()
                reloads.append(_timings(page, wanted))
        finally:
            browser.close()
    return {
        "first_open": first,
        "reload": {k: statistics.median(r[k] for r in reloads) for k in ("load", "restored")},
        "reloads": reloads,
    }


def _timings(page: Any, wanted: list[int]) -> dict[str, float]:
    restored = page.wait_for_function(RESTORED, arg=wanted, polling="raf").json_value()
    page.wait_for_load_state("load")
    load = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventStart")
    return {"load": round(float(load), 1), "restored": round(float(restored), 1)}


def measure(
    messages: int = MESSAGES, rounds: int = ROUNDS, progress: Any = print
) -> dict[str, Any]:
    """The whole measure (see the module); the figures and what the transcript held."""
    turns = messages // 2
    with tempfile.TemporaryDirectory(prefix="mcpkit-bench-host-") as tmp:
        proc, url = start_host(Path(tmp), turns)
        try:
            progress(f"making a conversation of {turns} turns")
            kept = make_conversation(url, turns)
            progress(f"kept {kept}; opening the page and reloading it {rounds} times")
            figures = measure_page(url, kept, rounds)
        finally:
            proc.stop()
    return {"messages": messages, "rounds": rounds, "kept": kept, **figures}


def table(results: dict[str, Any]) -> str:
    kept = results["kept"]
    rows = [
        f"host page, a conversation of {kept['user'] + kept['assistant']} messages with "
        f"{kept['views']} App views (ms from the navigation's start, page clock)",
        f"{'':<22} {'load event':>10} {'restored':>9}",
        f"{'first open':<22} {results['first_open']['load']:>10.0f} "
        f"{results['first_open']['restored']:>9.0f}",
        f"{'reload, median of ' + str(results['rounds']):<22} {results['reload']['load']:>10.0f} "
        f"{results['reload']['restored']:>9.0f}",
    ]
    return "\n".join(rows)


def bench_host(run: Run) -> None:
    """``python -m bench --only host``: the measure, its table among the run's notes."""
    reason = why_not()
    if reason is not None:
        run.note(f"host page: skipped, {reason}")
        return
    quick = run.settings.quick
    results = measure(
        40 if quick else MESSAGES, 1 if quick else ROUNDS, lambda text: print(f"host: {text}")
    )
    print(table(results))
    run.note("host page: " + json.dumps({k: results[k] for k in ("kept", "first_open", "reload")}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.host_page")
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--json", help="also write the figures here")
    options = parser.parse_args(argv)
    reason = why_not()
    if reason is not None:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    results = measure(options.messages, options.rounds)
    print(table(results))
    print(f"(machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
