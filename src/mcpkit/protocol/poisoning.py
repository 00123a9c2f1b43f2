"""Tool poisoning: reasons to look twice at a tool definition a server sent.

A tool's description (and its title, parameter names and parameter descriptions) is the
server's text, and it goes straight into a model's context.  A server can use it to
instruct the model (``<IMPORTANT>`` blocks, "ignore previous instructions") or hide text
from the person reviewing it (zero-width and bidi characters).  :func:`tool_flags` names
what it finds; nothing is rewritten.  The host shows the flags in consent prompts; the
gateway's ``tool_poisoning`` guardrail flags or hides such tools.  It lives here, below
both, so that one detector serves every role.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = ["tool_flags"]

_SUSPICIOUS = re.compile(
    r"<\s*/?\s*(important|system|instructions?)\b|ignore (all )?previous", re.IGNORECASE
)
#: Longer than this, a description is flagged (a place to hide instructions in).
LONG_DESCRIPTION = 4000


def tool_flags(tool: Mapping[str, Any]) -> list[str]:
    """Reasons a person should look twice at this tool definition."""
    flags: list[str] = []
    texts = [str(tool.get("description") or ""), str(tool.get("title") or "")]
    schema = tool.get("inputSchema")
    if isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            texts.extend(str(k) for k in props)
            texts.extend(
                str(p.get("description") or "") for p in props.values() if isinstance(p, Mapping)
            )
    joined = "\n".join(texts)
    if any(unicodedata.category(ch) == "Cf" for ch in joined):
        flags.append("contains invisible formatting characters (zero-width or bidi)")
    if _SUSPICIOUS.search(joined):
        flags.append("contains instruction-like text aimed at the model")
    if len(str(tool.get("description") or "")) > LONG_DESCRIPTION:
        flags.append("has an unusually long description")
    return flags
