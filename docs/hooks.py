"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``), run by ``mkdocs build``.

Two checks that ``mkdocs build --strict`` cannot make by itself, each a warning, so that
strict mode fails the build (and CI) instead of publishing a broken page:

* **Links into the code.** A page links to a source file the way GitHub shows it, by a
  relative path out of ``docs/`` (``../src/mcpkit/server/server.py``).  MkDocs only knows
  the files under ``docs/``, so such a link would be "not found".  Here every such target
  must exist in the repository; it is copied into the site under ``source/`` and the link
  is rewritten to that copy, so it works on GitHub and on the site alike.
* **Docstrings of the public API.** Every name in the ``__all__`` of a package that the
  API reference renders (``::: package`` in ``docs/reference/``) must have a docstring, and
  so must every public method and property of the classes among them (inherited ones
  too): the reference is generated from them, and an empty entry is a hole in the manual.

And two rendering fixes, for docstrings written in reST: Sphinx roles
(``:class:`~mcpkit.server.Server```), which mkdocstrings shows as written, lose the role in
the built HTML (a ``~`` keeps only the last component, as Sphinx would show it), and the
``::`` that introduces a literal block is dropped (the block itself renders as code).
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.mcpkit")

#: Folders of the repository that pages may link into.
CODE_ROOTS = ("src", "tests", "examples", "bench")
#: ``[text](../src/...)``, ``[text](../../examples/x.py)``; an ``#anchor`` is kept.
_ROOTS = "|".join(CODE_ROOTS)
_CODE_LINK = re.compile(
    rf"\]\((?P<up>(?:\.\./)+)(?P<path>(?:{_ROOTS})/[^)#\s]*)(?P<anchor>#[^)\s]*)?\)")
_DIRECTIVE = re.compile(r"^::: (?P<name>[\w.]+)", re.M)
#: ``:class:`~a.b.C``` as Markdown renders it: ``:class:<code>~a.b.C</code>``.
_ROLE = re.compile(
    r":(?:class|func|meth|mod|attr|exc|data|obj):<code>(?P<tilde>~?)(?P<path>[^<]*)</code>")
SOURCE_PREFIX = "source"


def _repo(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def _code_target(page_src: str, up: str, path: str, config: MkDocsConfig) -> str | None:
    """The repository path a code link points at, or None when it climbs out of the repo."""
    docs = Path(config.docs_dir).resolve()
    target = (docs / Path(page_src).parent / up / path).resolve()
    try:
        return target.relative_to(_repo(config)).as_posix()
    except ValueError:
        return None


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Copy every source file a page links to into the site, warning about missing ones."""
    repo = _repo(config)
    wanted: dict[str, str] = {}
    for page in files.documentation_pages():
        text = Path(page.abs_src_path or "").read_text(encoding="utf-8")
        for match in _CODE_LINK.finditer(text):
            target = _code_target(page.src_uri, match["up"], match["path"], config)
            if target is None or not (repo / target).is_file():
                log.warning("%s links to %s%s, which is not a file of the repository",
                            page.src_uri, match["up"], match["path"])
                continue
            wanted[target] = page.src_uri
    for target in sorted(wanted):
        files.append(File.generated(config, f"{SOURCE_PREFIX}/{target}",
                                    abs_src_path=str(repo / target)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    """Point links into the code at their copies under ``source/``."""

    def rewrite(match: re.Match[str]) -> str:
        target = _code_target(page.file.src_uri, match["up"], match["path"], config)
        if target is None:
            return match[0]
        here = posixpath.dirname(page.file.src_uri)
        copy = posixpath.relpath(f"{SOURCE_PREFIX}/{target}", here or ".")
        return f"]({copy}{match['anchor'] or ''})"

    return _CODE_LINK.sub(rewrite, markdown)


def on_page_content(html: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    """Show Sphinx roles from the docstrings as plain code; drop reST ``::`` marks."""

    def plain(match: re.Match[str]) -> str:
        path = match["path"]
        return f"<code>{path.rsplit('.', 1)[-1] if match['tilde'] else path}</code>"

    html = html.replace("<p>::</p>", "").replace("::</p>", ":</p>")  # reST literal-block marks
    return _ROLE.sub(plain, html)


def on_pre_build(config: MkDocsConfig) -> None:
    """Warn about every public name of a rendered package that has no docstring."""
    import griffe  # mkdocstrings' own loader: what it sees is what the reference shows

    docs = Path(config.docs_dir)
    packages = sorted({m["name"] for page in (docs / "reference").glob("*.md")
                       for m in _DIRECTIVE.finditer(page.read_text(encoding="utf-8"))})
    loader = griffe.GriffeLoader(search_paths=[str(_repo(config) / "src")])
    roots = {top: loader.load(top) for top in {p.partition(".")[0] for p in packages}}
    loader.resolve_aliases(implicit=False, external=False)
    for package in packages:
        top, _, rest = package.partition(".")
        module = roots[top][rest] if rest else roots[top]
        for export in module.exports or ():
            name = str(export)
            if name not in module.all_members:
                continue  # made on first use by the module's __getattr__: nothing to read
            obj = module.all_members[name]
            target = obj.final_target if isinstance(obj, griffe.Alias) else obj
            if not target.docstring:
                log.warning("%s.%s is in __all__ but has no docstring (the API reference "
                            "is built from it)", package, name)
            if not isinstance(target, griffe.Class):
                continue
            for member_name, member in target.all_members.items():
                found = member.final_target if isinstance(member, griffe.Alias) else member
                if member_name.startswith("_") or found.is_attribute or found.docstring:
                    continue
                log.warning("%s.%s.%s is public but has no docstring (the API reference "
                            "is built from it)", package, name, member_name)
