"""A guardrail of your own, loaded by ``class = "gateway_guards:ReadOnly"`` in
gateway-security.toml (from the config file's folder).  Keys of its ``[[guardrail]]``
table other than ``class`` and ``name`` are passed to ``__init__``."""

from __future__ import annotations

from fnmatch import fnmatchcase

from mcpkit import Context
from mcpkit.server.middleware.guardrails import Guardrail


class ReadOnly(Guardrail):
    """Refuses tool calls whose (namespaced) name matches one of ``deny``."""

    def __init__(self, deny: list[str], code: int = -32050) -> None:
        self.deny = tuple(deny)
        self.code = code  # what refuse() answers with

    async def check_request(self, ctx: Context) -> None:
        name = str(ctx.params.get("name", ""))
        if ctx.method == "tools/call" and any(fnmatchcase(name, p) for p in self.deny):
            self.refuse(f"{name} changes data; this gateway is read-only", data={"name": name})

    def reads_answers(self, method: str, name: str | None) -> bool:
        return False  # it never looks at answers
