"""Matching URIs against RFC 6570 resource templates, in linear time.

Templates are parsed once, at registration, into literal and variable parts.  Matching
walks the URI left to right with ``str.find`` and character-class scans: no regular
expression, so no backtracking and no ReDoS (which hit other SDKs' template matchers;
even ``date://{y}-{m}-{d}`` compiles to a catastrophic regex).  The rules that make the
walk deterministic:

* a variable ends at the first occurrence of the literal that follows it (after at least
  one character), or where its character class ends;
* of adjacent variables (``{a}{b}``) the first takes all it can while leaving one
  character for each one after it;
* ``{;name}`` only matches a parameter of that exact name.

Supported: ``{var}``, ``{+var}``, ``{#var}``, ``{/var}``, ``{.var}``, ``{;var}`` and query
forms ``{?a,b}`` / ``{&a,b}`` at the end (matched by parsing the query string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

MAX_TEMPLATE_LENGTH = 1024
MAX_URI_LENGTH = 8192

_EXPR = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,*%]+)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_.%]+\*?")

#: Characters each operator's value may not contain.
_STOP = {
    "": "/?#",
    "+": "?#",
    "#": "",
    "/": "/?#",
    ".": "/?#.",
    ";": ";/?#",
}
#: The character an operator's expansion starts with.
_LEAD = {"": "", "+": "", "#": "#", "/": "/", ".": ".", ";": ";"}


class TemplateError(ValueError):
    """The template is not a supported RFC 6570 template."""


@dataclass(frozen=True, slots=True)
class _Var:
    name: str
    op: str


_Part = str | _Var


@dataclass(frozen=True, slots=True)
class UriTemplate:
    template: str
    variables: tuple[str, ...]
    _parts: tuple[_Part, ...]
    _query_vars: tuple[str, ...]

    @classmethod
    def compile(cls, template: str) -> UriTemplate:
        if len(template) > MAX_TEMPLATE_LENGTH:
            raise TemplateError("template too long")
        parts: list[_Part] = []
        path_vars: list[str] = []
        query_vars: list[str] = []
        pos = 0
        for match in _EXPR.finditer(template):
            literal = template[pos : match.start()]
            if "{" in literal or "}" in literal:
                raise TemplateError(f"unbalanced braces in {template!r}")
            if query_vars and literal:
                raise TemplateError("literal text after a query expression is not supported")
            if literal:
                parts.append(literal)
            op, names_text = match.group(1), match.group(2)
            names = names_text.split(",")
            for name in names:
                if not _VARNAME.fullmatch(name):
                    raise TemplateError(f"bad variable name {name!r}")
            clean = [n.rstrip("*") for n in names]
            if op in ("?", "&"):
                query_vars.extend(clean)
            else:
                if query_vars:
                    raise TemplateError("path expression after a query expression")
                if len(clean) != 1:
                    raise TemplateError("only one variable per path expression is supported")
                if clean[0] in path_vars:
                    raise TemplateError(f"variable {clean[0]!r} used twice")
                path_vars.append(clean[0])
                parts.append(_Var(clean[0], op))
            pos = match.end()
        tail = template[pos:]
        if "{" in tail or "}" in tail:
            raise TemplateError(f"unbalanced braces in {template!r}")
        if query_vars and tail:
            raise TemplateError("literal text after a query expression is not supported")
        if tail:
            parts.append(tail)
        return cls(template, tuple(path_vars + query_vars), tuple(parts), tuple(query_vars))

    def match(self, uri: str) -> dict[str, str] | None:
        """Variables of ``uri`` when it matches the template, else None."""
        if len(uri) > MAX_URI_LENGTH:
            return None
        path, query = uri, ""
        if self._query_vars:
            path, _, query = uri.partition("?")
        values: dict[str, str] = {}
        pos = 0
        parts = self._parts
        for index, part in enumerate(parts):
            if isinstance(part, str):
                if not path.startswith(part, pos):
                    return None
                pos += len(part)
                continue
            found = self._take(path, pos, part, parts[index + 1 :])
            if found is None:
                return None
            value, pos = found
            values[part.name] = unquote(value)
        if pos != len(path):
            return None
        if self._query_vars:
            pairs = dict(parse_qsl(query, keep_blank_values=True))
            for name in self._query_vars:
                if name in pairs:
                    values[name] = pairs[name]
        return values

    @staticmethod
    def _take(path: str, pos: int, var: _Var, rest: tuple[_Part, ...]) -> tuple[str, int] | None:
        """The value of ``var`` at ``pos`` and where it ends, or None."""
        lead = _LEAD[var.op]
        if lead:
            if not path.startswith(lead, pos):
                return None
            pos += len(lead)
        if var.op == ";":
            if not path.startswith(var.name, pos):
                return None
            pos += len(var.name)
            if pos < len(path) and path[pos] == "=":
                pos += 1
            elif pos < len(path) and path[pos] not in _STOP[";"]:
                return None  # a longer parameter name that merely starts with ours
        stop = _STOP[var.op]
        limit = pos
        while limit < len(path) and path[limit] not in stop:
            limit += 1
        minimum = 0 if var.op == ";" else 1
        if not rest:
            end = limit
        elif isinstance(rest[0], str):
            end = path.find(rest[0], pos + minimum, limit + len(rest[0]))
            if end < 0 or end > limit:
                return None
        else:
            # Adjacent variables: leave one character (or the next lead) for each.
            following = 0
            for part in rest:
                if not isinstance(part, _Var):
                    break
                following += 1
            next_lead = _LEAD[rest[0].op]
            if next_lead:
                end = path.find(next_lead, pos + minimum, limit + 1)
                if end < 0:
                    end = limit
            else:
                end = limit - following
        if end - pos < minimum:
            return None
        return path[pos:end], end


def is_template(uri: str) -> bool:
    return "{" in uri and "}" in uri
