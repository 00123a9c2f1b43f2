"""Who may do what: allow/deny rules per principal or group, per method and name pattern.

Rules are evaluated in file order; the first rule that matches decides.  When none
matches, ``default_effect`` decides.  Patterns are shell-style globs (``fs_*``), matched
against the *namespaced* name the client sees (``tools/call`` of ``fs_read``) and the
method (``tools/*``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .config import Rule


@dataclass(frozen=True)
class Principal:
    """An authenticated caller (``anonymous`` when the gateway has no auth)."""

    name: str
    groups: tuple[str, ...] = ()
    claims: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    #: Granted OAuth scopes (jwt mode); per-tool scope checks read them.
    scopes: frozenset[str] = field(default=frozenset(), compare=False, hash=False)

    def __str__(self) -> str:
        return self.name


ANONYMOUS = Principal("anonymous")


def _any(patterns: tuple[str, ...], value: str) -> bool:
    return any(fnmatchcase(value, p) for p in patterns)


class Authorizer:
    def __init__(self, rules: tuple[Rule, ...], default_effect: str = "allow") -> None:
        self.rules = rules
        self.default_effect = default_effect

    def decide(self, principal: Principal, method: str, name: str | None) -> tuple[bool, str]:
        """(allowed, reason)."""
        for index, rule in enumerate(self.rules):
            who = (
                _any(rule.principals, principal.name)
                if not rule.groups
                else any(_any(rule.groups, g) for g in principal.groups)
            )
            if rule.groups and rule.principals != ("*",):
                who = who and _any(rule.principals, principal.name)
            if not who or not _any(rule.methods, method):
                continue
            if name is not None and not _any(rule.names, name):
                continue
            if name is None and rule.names != ("*",):
                continue
            return rule.effect == "allow", f"rule[{index}] {rule.effect}"
        return self.default_effect == "allow", f"default {self.default_effect}"
