"""``mcpkit pack TARGET``: an MCP Bundle (``.mcpb``) made from the server object.

``--check`` is for CI: it compares a committed ``manifest.json`` with the one the code
gives now and exits 1 with a diff when they differ (a tool added, a setting renamed,
the version bumped without the manifest).  ``--manifest-only`` writes just the manifest,
the file to commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bundle import BundleError, diff_manifests, dump_manifest, plan_bundle, write_bundle
from .command import Command, add_list_option
from .exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .target import TargetError, load_server


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="TARGET", help="the server: demo.py[:name] or pkg.mod:name")
    p.add_argument(
        "-o", "--output", metavar="DIR", default=".", help="where to write (default: here)"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compare the committed manifest (--manifest) with the code; exit 1 with a diff",
    )
    p.add_argument(
        "--manifest",
        metavar="PATH",
        help="the committed manifest.json for --check (default: beside TARGET)",
    )
    p.add_argument(
        "--manifest-only", action="store_true", help="write DIR/manifest.json, no archive"
    )
    add_list_option(
        p,
        "--with",
        dest="with_dists",
        metavar="DIST",
        help="an installed distribution the server imports, bundled with its requirements",
    )


def run(args: argparse.Namespace) -> int:
    try:
        server = load_server(args.target)
        bundle = plan_bundle(server, args.target, with_dists=args.with_dists)
    except (TargetError, BundleError) as exc:
        print(f"mcpkit pack: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        return _check(args, bundle.manifest)
    out = Path(args.output)
    if args.manifest_only:
        out.mkdir(parents=True, exist_ok=True)
        (out / "manifest.json").write_text(dump_manifest(bundle.manifest), encoding="utf-8")
        print(f"mcpkit pack: wrote {out / 'manifest.json'}", file=sys.stderr)
        return EXIT_OK
    path = out / f"{server.name}-{server.version}.mcpb"
    write_bundle(bundle, path)
    tools, prompts = len(bundle.manifest["tools"]), len(bundle.manifest["prompts"])
    print(
        f"mcpkit pack: wrote {path} ({tools} tools, {prompts} prompts, "
        f"{len(bundle.files)} files; for {bundle.manifest['compatibility']['platforms'][0]}, "
        f"Python {bundle.manifest['compatibility']['runtimes']['python']})",
        file=sys.stderr,
    )
    return EXIT_OK


def _check(args: argparse.Namespace, manifest: dict[str, object]) -> int:
    committed = Path(args.manifest) if args.manifest else _beside(args.target)
    if not committed.is_file():
        print(
            f"mcpkit pack: no committed manifest at {committed} "
            "(write one with --manifest-only, or name it with --manifest)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    diff = diff_manifests(committed.read_text(encoding="utf-8"), manifest, str(committed))
    if not diff:
        print(f"mcpkit pack: {committed} matches the code", file=sys.stderr)
        return EXIT_OK
    sys.stdout.write(diff)
    print(
        f"mcpkit pack: {committed} no longer matches the code (diff above); "
        "regenerate it with --manifest-only",
        file=sys.stderr,
    )
    return EXIT_FAILURE


def _beside(target: str) -> Path:
    spec = target.partition(":")[0]
    folder = Path(spec).parent if spec.endswith(".py") or "/" in spec else Path.cwd()
    return folder / "manifest.json"


COMMAND = Command(
    "pack",
    help="build an MCP Bundle (.mcpb) for desktop hosts from a server",
    description="Build an MCP Bundle (.mcpb): manifest.json generated from the server "
    "(name, version, tools, prompts, settings as user_config) and the Python packages it "
    "needs, so that a host runs it with its own python3, no uv or pip.",
    examples=[
        "mcpkit pack demo.py                       # ./demo-1.0.0.mcpb",
        "mcpkit pack demo.py --manifest-only -o .  # the manifest.json to commit",
        "mcpkit pack demo.py --check               # CI: exit 1 with a diff when it is stale",
        "mcpkit pack pkg.server:app --with requests -o dist/",
    ],
    notes="exit status: 0 ok, 1 the committed manifest differs from the code (--check), "
    "2 bad usage.",
    arguments=add_arguments,
    run=run,
)
