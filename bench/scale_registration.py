"""Registering 10,000 tools, this tree against another one, side by side (issue #23).

    python -m bench.scale_registration --base /tmp/before   # a `git archive` of the old tree

Each round runs one fresh interpreter per tree, alternating, with that tree's ``src`` first
on ``sys.path``; the child registers ``N`` plain tools (``def tool(a: int, b: str = "x")``,
as bench/scale.py does) and reports the process CPU time and the wall time of the loop.
The medians over the rounds and their ratio are printed: the ratio is the figure to read
on a shared machine (both trees see the same neighbours).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
from mcpkit import Server
n = int(sys.argv[1])
server = Server("scale", "1.0.0")
c0, t0 = time.process_time(), time.perf_counter()
for i in range(n):
    def tool(a: int, b: str = "x") -> str:
        return b * a
    server.tool(tool, name=f"tool_{i}", description=f"Tool number {i}.")
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}))
"""


def run_once(tree: Path, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(n)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return dict(json.loads(done.stdout))


def compare(base: Path, n: int, rounds: int) -> dict[str, dict[str, float]]:
    samples: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(rounds):
        samples["before"].append(run_once(base, n))
        samples["after"].append(run_once(HERE, n))
    out = {
        side: {k: statistics.median(s[k] for s in runs) for k in ("cpu_s", "wall_s")}
        for side, runs in samples.items()
    }
    out["after/before"] = {k: out["after"][k] / out["before"][k] for k in ("cpu_s", "wall_s")}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, type=Path, help="the other tree (has src/)")
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    result = compare(args.base, args.tools, args.rounds)
    for side, r in result.items():
        print(f"{side:<13} cpu {r['cpu_s']:.3f}  wall {r['wall_s']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
