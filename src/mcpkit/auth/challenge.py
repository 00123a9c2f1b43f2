"""``WWW-Authenticate`` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

Parsing copes with several challenges in one header (``Bearer ..., DPoP ...``), quoted
strings with escapes, and bare token values.  Formatting quotes every value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Challenge", "format_challenge", "parse_challenges"]

_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68 = _TCHARS | frozenset("/=")


@dataclass(slots=True)
class Challenge:
    scheme: str
    params: dict[str, str] = field(default_factory=dict)
    token68: str | None = None

    def get(self, name: str) -> str | None:
        return self.params.get(name.lower())

    @property
    def error(self) -> str | None:
        return self.get("error")

    @property
    def scopes(self) -> list[str] | None:
        value = self.get("scope")
        return None if value is None else value.split()

    @property
    def resource_metadata(self) -> str | None:
        return self.get("resource_metadata")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> None:
        while self.peek() in (" ", "\t") and not self.at_end():
            self.pos += 1

    def skip_separators(self) -> None:
        while self.peek() in (" ", "\t", ",") and not self.at_end():
            self.pos += 1

    def token(self, chars: frozenset[str] = _TCHARS) -> str:
        start = self.pos
        while not self.at_end() and self.text[self.pos] in chars:
            self.pos += 1
        return self.text[start : self.pos]

    def quoted(self) -> str:
        # at the opening quote
        self.pos += 1
        out: list[str] = []
        while not self.at_end():
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            self.pos += 1
            if ch == '"':
                break
            out.append(ch)
        return "".join(out)


def parse_challenges(header: str | None) -> list[Challenge]:
    """All challenges in one ``WWW-Authenticate`` value (unknown syntax is skipped)."""
    if not header:
        return []
    s = _Scanner(header)
    challenges: list[Challenge] = []
    while True:
        s.skip_separators()
        if s.at_end():
            break
        scheme = s.token()
        if not scheme:
            s.pos += 1  # garbage: skip a character and resynchronise
            continue
        challenge = Challenge(scheme)
        challenges.append(challenge)
        s.skip_ws()
        # token68 form: "Scheme abc123==" ("=" only as trailing padding, then end or ",")
        mark = s.pos
        t68 = s.token(_TOKEN68)
        s.skip_ws()
        if t68 and "=" not in t68.rstrip("=") and (s.at_end() or s.peek() == ","):
            challenge.token68 = t68
            continue
        s.pos = mark
        _parse_params(s, challenge)
    return challenges


def _parse_params(s: _Scanner, challenge: Challenge) -> None:
    while True:
        s.skip_ws()
        mark = s.pos
        name = s.token()
        if not name:
            return
        s.skip_ws()
        if s.peek() != "=":
            s.pos = mark  # a new challenge's scheme
            return
        s.pos += 1
        s.skip_ws()
        value = s.quoted() if s.peek() == '"' else s.token(_TOKEN68)
        challenge.params.setdefault(name.lower(), value)
        s.skip_ws()
        if s.peek() != ",":
            return
        s.pos += 1
        s.skip_ws()
        # After a comma: another param ("name=") or the next challenge ("Scheme ...").
        look = s.pos
        s.token()
        s.skip_ws()
        is_param = s.peek() == "="
        s.pos = look
        if not is_param:
            return


def _quote(value: str) -> str:
    cleaned = "".join(ch for ch in value if ch >= " " and ch != "\x7f")
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_challenge(scheme: str, params: dict[str, str | None]) -> str:
    """``Scheme a="x", b="y"`` with ``None`` values left out and every value quoted."""
    parts = [f"{name}={_quote(value)}" for name, value in params.items() if value is not None]
    return f"{scheme} {', '.join(parts)}" if parts else scheme
