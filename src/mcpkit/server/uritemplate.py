"""Matching URIs against RFC 6570 resource templates.

Templates are compiled once, at registration, into an anchored regular expression whose
variable parts are single character classes (``[^/?#]*`` etc.), so matching is linear in
the URI length: no nested quantifiers, no backtracking blow-up on hostile URIs (the ReDoS
that hit other SDKs' template matchers).  Supported expressions: ``{var}``, ``{+var}``,
``{#var}``, ``{/var}``, ``{.var}``, ``{;var}`` and query forms ``{?a,b}`` / ``{&a,b}``
(matched by parsing the query string, not by regex).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

MAX_TEMPLATE_LENGTH = 1024
MAX_URI_LENGTH = 8192

_EXPR = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,*%]+)\}")
_VARNAME = re.compile(r"^[A-Za-z0-9_.%]+\*?$")


class TemplateError(ValueError):
    """The template is not a supported RFC 6570 template."""


@dataclass(frozen=True, slots=True)
class UriTemplate:
    template: str
    variables: tuple[str, ...]
    _regex: re.Pattern[str]
    _path_vars: tuple[str, ...]
    _query_vars: tuple[str, ...]

    @classmethod
    def compile(cls, template: str) -> UriTemplate:
        if len(template) > MAX_TEMPLATE_LENGTH:
            raise TemplateError("template too long")
        pattern: list[str] = ["^"]
        path_vars: list[str] = []
        query_vars: list[str] = []
        pos = 0
        query_started = False
        for match in _EXPR.finditer(template):
            literal = template[pos : match.start()]
            if "{" in literal or "}" in literal:
                raise TemplateError(f"unbalanced braces in {template!r}")
            if query_started and literal:
                raise TemplateError("literal text after a query expression is not supported")
            pattern.append(re.escape(literal))
            op, names_text = match.group(1), match.group(2)
            names = names_text.split(",")
            for name in names:
                if not _VARNAME.match(name):
                    raise TemplateError(f"bad variable name {name!r}")
            clean = [n.rstrip("*") for n in names]
            if op in ("?", "&"):
                query_started = True
                query_vars.extend(clean)
            else:
                if query_started:
                    raise TemplateError("path expression after a query expression")
                if len(clean) != 1:
                    raise TemplateError("only one variable per path expression is supported")
                name = clean[0]
                if name in path_vars:
                    raise TemplateError(f"variable {name!r} used twice")
                path_vars.append(name)
                pattern.append(_group(op, len(path_vars) - 1))
            pos = match.end()
        tail = template[pos:]
        if "{" in tail or "}" in tail:
            raise TemplateError(f"unbalanced braces in {template!r}")
        if query_started and tail:
            raise TemplateError("literal text after a query expression is not supported")
        pattern.append(re.escape(tail))
        if query_vars:
            pattern.append(r"(?:\?(?P<_q>[^#]*))?")
        pattern.append("$")
        return cls(
            template,
            tuple(path_vars + query_vars),
            re.compile("".join(pattern)),
            tuple(path_vars),
            tuple(query_vars),
        )

    def match(self, uri: str) -> dict[str, str] | None:
        """Variables of ``uri`` when it matches the template, else None."""
        if len(uri) > MAX_URI_LENGTH:
            return None
        found = self._regex.match(uri)
        if found is None:
            return None
        values = {name: unquote(found.group(f"v{i}")) for i, name in enumerate(self._path_vars)}
        if self._query_vars:
            query = found.group("_q") or ""
            pairs = dict(parse_qsl(query, keep_blank_values=True))
            for name in self._query_vars:
                if name in pairs:
                    values[name] = pairs[name]
        return values


def _group(op: str, index: int) -> str:
    name = f"v{index}"
    if op == "":
        return f"(?P<{name}>[^/?#]+)"
    if op == "+":
        return f"(?P<{name}>[^?#]+)"
    if op == "#":
        return f"#(?P<{name}>.*)"
    if op == "/":
        return f"/(?P<{name}>[^/?#]+)"
    if op == ".":
        return rf"\.(?P<{name}>[^/?#.]+)"
    if op == ";":
        return f";[^=;/?#]+=?(?P<{name}>[^;/?#]*)"
    raise TemplateError(f"unsupported operator {op!r}")


def is_template(uri: str) -> bool:
    return "{" in uri and "}" in uri
