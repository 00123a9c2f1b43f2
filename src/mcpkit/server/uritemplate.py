"""Matching URIs against RFC 6570 resource templates, in linear time.

Templates are parsed once, at registration, into literal and variable parts.  No regular
expression is involved, so there is no backtracking and no ReDoS (which hit other SDKs'
template matchers; even ``date://{y}-{m}-{d}`` compiles to a catastrophic regex).  A
template with one variable is matched by a direct walk; with several variables, whose
split may be ambiguous, by a small Pike VM that follows every possible split at once
(linear in the URI length) and prefers the earlier variable taking more.  The walk's
rules:

* a variable ends at the first occurrence of the literal that follows it (after at least
  one character), or where its character class ends; before a literal that ends the
  template it takes everything up to that literal (``{name}.txt`` matches ``a.txt.txt``);
* of adjacent variables (``{a}{b}``) the first takes all it can while leaving one
  character for each one after it;
* ``{;name}`` only matches a parameter of that exact name.

Supported: ``{var}``, ``{+var}``, ``{#var}``, ``{/var}``, ``{.var}``, ``{;var}`` and query
forms ``{?a,b}`` / ``{&a,b}`` at the end (matched by parsing the query string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

MAX_TEMPLATE_LENGTH = 1024
MAX_URI_LENGTH = 8192

_EXPR = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,*%]+)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_.%]+\*?")

#: RFC 3986 reserved characters: simple, path, label and parameter expansion encode
#: them, so an expanded value never holds one raw (this is also what keeps
#: ``{a}-{b}:{c}`` splits unambiguous).  Non-ASCII text is tolerated raw.
_RESERVED = ":/?#[]@!$&'()*+,;="
#: Characters each operator's value may not contain.
_STOP = {
    "": _RESERVED,
    "+": "?#",
    "#": "",
    "/": _RESERVED,
    ".": _RESERVED + ".",
    ";": _RESERVED,
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


def _literal(template: str, text: str, parts: list[_Part], query_vars: list[str]) -> None:
    """Add the literal ``text`` between (or after) expressions, refusing a stray brace and
    text after a query expression (it could not be matched back)."""
    if "{" in text or "}" in text:
        raise TemplateError(f"unbalanced braces in {template!r}")
    if query_vars and text:
        raise TemplateError("literal text after a query expression is not supported")
    if text:
        parts.append(text)


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
            _literal(template, template[pos : match.start()], parts, query_vars)
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
        _literal(template, template[pos:], parts, query_vars)
        return cls(template, tuple(path_vars + query_vars), tuple(parts), tuple(query_vars))

    def match(self, uri: str) -> dict[str, str] | None:
        """Variables of ``uri`` when it matches the template, else None."""
        if len(uri) > MAX_URI_LENGTH:
            return None
        path, query = uri, ""
        if self._query_vars:
            path, _, query = uri.partition("?")
        if len(self.variables) - len(self._query_vars) > 1:
            return self._exact(path, query)  # several variables: the split is ambiguous
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
                return self._exact(path, query)
            value, pos = found
            values[part.name] = unquote(value)
        if pos != len(path):
            return self._exact(path, query)
        return self._with_query(values, query)

    def _with_query(self, values: dict[str, str], query: str) -> dict[str, str]:
        if self._query_vars:
            pairs = dict(parse_qsl(query, keep_blank_values=True))
            for name in self._query_vars:
                if name in pairs:
                    values[name] = pairs[name]
        return values

    def _exact(self, path: str, query: str) -> dict[str, str] | None:
        """The fast walk commits to the first split it finds; when that fails, decide
        exactly (any valid expansion matches) with a Pike VM: every possible split is
        followed at once, so the cost stays linear in the URI length."""
        program = _program(self._parts)
        saves = _pike(program, path)
        if saves is None:
            return None
        values = {}
        for index, part in enumerate(p for p in self._parts if isinstance(p, _Var)):
            start, end = saves[2 * index], saves[2 * index + 1]
            values[part.name] = unquote(path[start:end])
        return self._with_query(values, query)

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
        elif isinstance(rest[0], str) and len(rest) == 1:
            # The template ends with this literal: the value is everything before it.
            end = len(path) - len(rest[0])
            if not path.endswith(rest[0]) or end > limit:
                return None
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


# ---------------------------------------------------------------- the exact matcher
# Instructions: ("char", c) | ("class", stop) | ("split", a, b) | ("jmp", a) | ("save", k)
# | ("match",).  A variable's value is a loop over its character class between two saves.


def _program(parts: tuple[_Part, ...]) -> list[tuple[Any, ...]]:
    code: list[tuple[Any, ...]] = []
    slot = 0
    for part in parts:
        if isinstance(part, str):
            code.extend(("char", c) for c in part)
            continue
        code.extend(("char", c) for c in _LEAD[part.op])
        if part.op == ";":
            code.extend(("char", c) for c in part.name)
            split = len(code)
            code.append(("split", split + 1, split + 2))
            code.append(("char", "="))
        code.append(("save", slot))
        loop = len(code)
        if part.op == ";":  # may be empty
            code.append(("split", loop + 1, loop + 3))
            code.append(("class", _STOP[part.op]))
            code.append(("jmp", loop))
        else:  # at least one character
            code.append(("class", _STOP[part.op]))
            code.append(("split", loop, loop + 2))
        code.append(("save", slot + 1))
        slot += 2
    code.append(("match",))
    return code


def _pike(code: list[tuple[Any, ...]], text: str) -> tuple[int, ...] | None:
    slots = sum(1 for op in code if op[0] == "save")

    def add(
        threads: list[tuple[int, tuple[int, ...]]],
        seen: set[int],
        pc: int,
        saves: tuple[int, ...],
        at: int,
    ) -> None:
        stack = [(pc, saves)]
        while stack:
            pc, saves = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = code[pc]
            if op[0] == "jmp":
                stack.append((op[1], saves))
            elif op[0] == "split":
                stack.append((op[2], saves))  # lower priority first on the stack
                stack.append((op[1], saves))
            elif op[0] == "save":
                updated = list(saves)
                updated[op[1]] = at
                stack.append((pc + 1, tuple(updated)))
            else:
                threads.append((pc, saves))

    current: list[tuple[int, tuple[int, ...]]] = []
    add(current, set(), 0, (0,) * slots, 0)
    for at, ch in enumerate(text):
        following: list[tuple[int, tuple[int, ...]]] = []
        seen: set[int] = set()
        for pc, saves in current:
            op = code[pc]
            if (op[0] == "char" and op[1] == ch) or (op[0] == "class" and ch not in op[1]):
                add(following, seen, pc + 1, saves, at + 1)
        current = following
        if not current:
            return None
    for pc, saves in current:
        if code[pc][0] == "match":
            return saves
    return None


def is_template(uri: str) -> bool:
    return "{" in uri and "}" in uri
