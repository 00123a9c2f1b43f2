"""Guardrails: code a server runs on every request and every answer, which may refuse
the request, redact the answer or annotate it.

A guardrail is a :class:`mcpkit.server.Middleware` (``Server(middleware=[...])`` on any
server, a proxy's first of all) with two simpler hooks: :meth:`Guardrail.check_request`
(before the handler or upstream is called: refuse with :meth:`Guardrail.refuse`, or
replace ``ctx.params``) and :meth:`Guardrail.check_answer` (after: return the answer to
pass on, changed or not).  Refusals are JSON-RPC errors with the guardrail's code and
name (the gateway's audit line records them as ``guardrail:<name>``); other calls are
not affected.

The gateway builds them from its TOML with :func:`build_guardrails`, in order (the first
is the outermost layer)::

    [[guardrail]]
    kind = "tool_poisoning"       # built in: flag (default) or hide suspicious tools
    action = "hide"

    [[guardrail]]
    kind = "redact_secrets"       # built in: regexes replaced in every answer
    patterns = ['sk-[A-Za-z0-9]{20,}']

    [[guardrail]]
    class = "my_guards:NoDeletes" # your own Guardrail subclass; other keys are its kwargs
    code = -32050

Everything is checked when they are built (an unknown kind, a regex that does not
compile, a class that cannot be imported or built is a ``ValueError`` naming the
guardrail), so a gateway's live reload with a broken guardrail keeps the old config.

Answers are seen as parsed JSON on every path: the fast lane to a 2026-07-28 upstream
decodes each answer once and hands the guardrails that result.  A path that forwarded
answers byte for byte would have to ask :func:`reads_answers` first and leave the fast
lane for any tool a guardrail reads answers of (docs/gateway-security.md).
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ...protocol.poisoning import tool_flags
from ...types.errors import McpError
from . import CallNext, Middleware

if TYPE_CHECKING:
    from ..context import Context

__all__ = [
    "GUARDRAIL_REFUSED",
    "Guardrail",
    "GuardrailRefusal",
    "SecretRedaction",
    "ToolPoisoning",
    "build_guardrails",
    "reads_answers",
]

log = logging.getLogger("mcpkit.server")

#: The default code of a guardrail's refusal (outside the JSON-RPC/MCP reserved range,
#: next to the gateway's -31001 unauthenticated, -31003 forbidden, -31029 rate limited).
GUARDRAIL_REFUSED = -31030
#: Where guardrails annotate an answer: ``_meta[META_KEY][<guardrail name>]``.
META_KEY = "io.mcpkit.gateway/guardrails"
#: Members that are protocol plumbing, not content: never redacted.
_PLUMBING = frozenset(
    {"requestState", "resultType", "taskId", "nextCursor", "cursor", "mimeType", "blob", "uri"}
)


class GuardrailRefusal(McpError):
    """A request a guardrail refused: the caller's JSON-RPC error."""

    def __init__(self, guardrail: str, message: str, code: int, data: object = None) -> None:
        payload = {"guardrail": guardrail, **(data if isinstance(data, dict) else {})}
        super().__init__(code, message, payload)
        self.guardrail = guardrail
        #: What the audit line records (as PolicyError's outcome).
        self.outcome = f"guardrail:{guardrail}"


class Guardrail(Middleware):
    """Base class: override :meth:`check_request`, :meth:`check_answer`, or any
    middleware hook (``on_call_tool``, ``on_list_tools``, ...) for finer control.

    ``name`` (the ``name`` key of its ``[[guardrail]]``, else its kind or class name)
    appears in refusals, in the audit line and in annotations; ``code`` is the JSON-RPC
    code :meth:`refuse` uses unless told otherwise.
    """

    name: str = "guardrail"
    code: int = GUARDRAIL_REFUSED

    async def check_request(self, ctx: Context) -> None:
        """Before the upstream is called (every method: ``ctx.method``, ``ctx.params``,
        ``ctx.principal``).  Refuse with :meth:`refuse`; change the request by assigning
        ``ctx.params``."""

    async def check_answer(self, ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
        """After: the answer to pass on (this one, a changed copy, or refuse).  List
        answers may be cached by the gateway: copy before changing."""
        return result

    def reads_answers(self, method: str, name: str | None) -> bool:
        """Whether this guardrail needs the parsed answer of ``method`` on ``name``
        (default: yes; a guardrail that never looks at some answers may say so)."""
        return True

    async def on_request(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        await self.check_request(ctx)
        result = await call_next(ctx)
        return await self.check_answer(ctx, result)

    def refuse(self, message: str, *, code: int | None = None, data: object = None) -> NoReturn:
        """Refuse the request: the caller gets ``message`` with ``code`` (default
        :attr:`code`) and ``data`` (plus ``{"guardrail": name}``)."""
        raise GuardrailRefusal(self.name, message, self.code if code is None else code, data)

    def annotate(self, result: dict[str, Any], value: Any) -> dict[str, Any]:
        """A copy of ``result`` with ``value`` under ``_meta[META_KEY][name]``."""
        meta = dict(result.get("_meta") or {})
        notes = dict(meta.get(META_KEY) or {})
        notes[self.name] = value
        meta[META_KEY] = notes
        return {**result, "_meta": meta}


def _name_of(ctx: Context) -> str | None:
    params = ctx.params
    value = params.get("uri") if ctx.method == "resources/read" else params.get("name")
    return value if isinstance(value, str) else None


async def _definition(ctx: Context, name: str) -> dict[str, Any] | None:
    """The called tool's definition: the server's ``tool_definition(name)`` when it has
    one (a gateway asks its upstream), else its own registered tool's."""
    lookup = getattr(ctx.server, "tool_definition", None)
    if lookup is not None:
        found: dict[str, Any] | None = await lookup(name)
        return found
    entry = ctx.server.tools.get(name)
    wire = getattr(entry, "wire", None)
    return wire if isinstance(wire, dict) else None


# --------------------------------------------------------------------------- built-ins


class ToolPoisoning(Guardrail):
    """Tools whose definitions try to instruct the model or hide text (the
    detector the host uses, :func:`mcpkit.protocol.poisoning.tool_flags`).

    ``action = "flag"`` (default) keeps the tool and annotates it: its ``_meta`` gets
    ``{"io.mcpkit.gateway/guardrails": {<name>: [reasons]}}`` and the server logs one
    warning per tool.  ``action = "hide"`` leaves it out of ``tools/list`` and refuses
    calls to it, also from a client that never listed."""

    def __init__(self, *, action: str = "flag") -> None:
        if action not in ("flag", "hide"):
            raise ValueError("action must be flag or hide")
        self.action = action
        #: tool name -> (the definition last checked, its flags): the detector reads every
        #: character, so a call checks a definition once, not on every call.
        self._checked: dict[str, tuple[dict[str, Any], list[str]]] = {}

    def _flags(self, tool: dict[str, Any]) -> list[str]:
        name = str(tool.get("name"))
        seen = self._checked.get(name)
        if seen is not None and (seen[0] is tool or seen[0] == tool):
            return seen[1]
        flags = tool_flags(tool)
        if len(self._checked) >= 10_000:
            self._checked.clear()
        self._checked[name] = (tool, flags)
        if flags:
            log.warning("guardrail %s: tool %s %s", self.name, name, "; ".join(flags))
        return flags

    async def check_request(self, ctx: Context) -> None:
        if self.action != "hide" or ctx.method != "tools/call":
            return
        name = _name_of(ctx)
        tool = await _definition(ctx, name) if name is not None else None
        flags = self._flags(tool) if tool is not None else []
        if flags:
            self.refuse(
                f"Tool {name} is hidden by guardrail {self.name!r}: its definition "
                f"{'; '.join(flags)}",
                data={"name": name},
            )

    async def check_answer(self, ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
        tools = result.get("tools")
        if ctx.method != "tools/list" or not isinstance(tools, list):
            return result
        kept: list[Any] = []
        for tool in tools:
            flags = self._flags(tool) if isinstance(tool, dict) else []
            if not flags:
                kept.append(tool)
            elif self.action == "flag":
                kept.append(self.annotate(tool, flags))
        return {**result, "tools": kept}

    def reads_answers(self, method: str, name: str | None) -> bool:
        return method == "tools/list"


class SecretRedaction(Guardrail):
    """Secrets (``patterns``: regular expressions) replaced by ``replacement`` in every
    string of the answers to requests on ``names`` (globs over the tool or prompt name or
    resource URI, default all; task and completion answers, which name no tool, always).
    Protocol members (``requestState``, ``taskId``, ``uri``, base64 ``blob``, ...) are
    left alone.  A redacted answer is annotated with the number of replacements."""

    def __init__(
        self,
        *,
        patterns: Sequence[str],
        replacement: str = "[REDACTED]",
        names: Sequence[str] = ("*",),
    ) -> None:
        if isinstance(patterns, str) or not patterns:
            raise ValueError("patterns must be a non-empty list of regular expressions")
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} does not compile: {exc}") from None
        self.pattern = re.compile("|".join(f"(?:{p})" for p in patterns))
        self.replacement = str(replacement)
        self.names = (names,) if isinstance(names, str) else tuple(names)

    def reads_answers(self, method: str, name: str | None) -> bool:
        if method.endswith("/list") or method == "server/discover":
            return False
        return name is None or any(fnmatchcase(name, p) for p in self.names)

    async def check_answer(self, ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
        if not self.reads_answers(ctx.method, _name_of(ctx)):
            return result
        counter = [0]
        redacted = self._redact(result, counter)
        if not counter[0]:
            return result
        return self.annotate(redacted, {"redacted": counter[0]})

    def _redact(self, value: Any, counter: list[int]) -> Any:
        """``value`` with secrets replaced; the same object where nothing changed."""
        if isinstance(value, str):
            new, count = self.pattern.subn(self.replacement, value)
            counter[0] += count
            return new if count else value
        if isinstance(value, dict):
            out: dict[str, Any] | None = None
            for key, item in value.items():
                if key in _PLUMBING:
                    continue
                new = self._redact(item, counter)
                if new is not item:
                    out = dict(value) if out is None else out
                    out[key] = new
            return value if out is None else out
        if isinstance(value, list):
            items = [self._redact(item, counter) for item in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value


BUILT_IN: dict[str, type[Guardrail]] = {
    "tool_poisoning": ToolPoisoning,
    "redact_secrets": SecretRedaction,
}


# --------------------------------------------------------------------------- wiring


def reads_answers(guards: Sequence[Middleware], method: str, name: str | None) -> bool:
    """Whether some guardrail needs the parsed answer (see the module docstring)."""
    return any(not isinstance(g, Guardrail) or g.reads_answers(method, name) for g in guards)


def build_guardrails(items: object, base_dir: Path | None = None) -> tuple[Guardrail, ...]:
    """Guardrail tables (``{"kind": ...}`` or ``{"class": "module:Name"}``, the other
    keys their arguments) -> built guardrails; a ``ValueError`` names the bad table.
    ``class`` modules are imported from ``sys.path`` or ``base_dir``."""
    if not isinstance(items, list):
        raise ValueError("[[guardrail]] must be an array of tables")
    out: list[Guardrail] = []
    for index, item in enumerate(items):
        where = f"guardrail[{index}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where} must be a table")
        options = dict(item)
        kind, path = options.pop("kind", None), options.pop("class", None)
        name = options.pop("name", None)
        if (kind is None) == (path is None):
            raise ValueError(f"{where} needs exactly one of kind or class")
        if kind is not None:
            cls = BUILT_IN.get(kind)
            if cls is None:
                raise ValueError(f"{where}.kind must be one of {', '.join(BUILT_IN)}")
        else:
            cls = _load_class(path, where, base_dir)
        label = name or kind or cls.__name__
        if not isinstance(label, str) or not label:
            raise ValueError(f"{where}.name must be a non-empty string")
        if any(g.name == label for g in out):
            raise ValueError(f"{where}: another guardrail is named {label!r} (set name)")
        try:
            guard = cls(**options)
        except Exception as exc:
            raise ValueError(f"{where} ({label}): {exc}") from None
        guard.name = label
        out.append(guard)
    return tuple(out)


def _load_class(path: object, where: str, base_dir: Path | None) -> type[Guardrail]:
    """``module:Name``, importable from ``sys.path`` or the config file's folder."""
    if not isinstance(path, str) or not re.fullmatch(r"[\w.]+:[\w.]+", path):
        raise ValueError(f"{where}.class must be 'module:ClassName', got {path!r}")
    module_name, _, attr = path.partition(":")
    folder = str(base_dir) if base_dir is not None else None
    added = folder is not None and folder not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as exc:
        raise ValueError(f"{where}.class {path}: cannot import it ({exc})") from None
    finally:
        if added:
            sys.path.remove(str(folder))
    if not (isinstance(target, type) and issubclass(target, Guardrail)):
        raise ValueError(
            f"{where}.class {path} is not a mcpkit.server.middleware.guardrails.Guardrail"
        )
    return target
