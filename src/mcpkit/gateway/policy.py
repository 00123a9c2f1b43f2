"""Who may do what: allow/deny rules per principal or group, per method and name pattern,
optionally with a CEL condition on the token's claims and the call's arguments.

Rules are evaluated in file order; the first rule that matches decides.  When none
matches, ``default_effect`` decides.  Patterns are shell-style globs (``fs_*``), matched
against the *namespaced* name the client sees (``tools/call`` of ``fs_read``), the
resource URI (``resources/read``; templates by their ``uriTemplate``) and the method
(``tools/*``).

A rule's ``when`` is a CEL expression over ``principal`` (string), ``groups`` (list),
``jwt`` (the token's claims; empty without a JWT), ``method``, ``name`` and ``args`` (the
tool's or prompt's arguments).  It is compiled once when the config is loaded.  When the
arguments are not known yet (listing tools) a rule whose condition reads ``args``
cannot be decided: an *allow* rule is then taken as matching (some calls may be allowed,
so the tool is listed) and a *deny* rule as not matching; the call itself is decided
with its arguments.  A condition that fails to evaluate (``args.path`` on a call without
``path``, a type mismatch) fails closed: a deny rule matches, an allow rule does not.
Such a refusal is not a deny: its reason says the rule could not be evaluated and why
(``rule 'exports' could not be evaluated: no such key 'rows'``) and its audit outcome is
``rule_error``, so an operator can tell a broken rule from a refused caller.  Write
conditions on optional arguments with ``has(args.rows) && args.rows > 10000``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, NamedTuple

from .config import ConfigError, Rule

log = logging.getLogger("mcpkit.gateway")

#: What a rule's ``when`` may read (see :mod:`mcpkit.gateway.policy`).
CEL_VARIABLES = frozenset({"principal", "groups", "jwt", "method", "name", "args"})


def compile_condition(text: object, where: str) -> tuple[Any, bool]:
    """Compile a CEL condition once, at load: a syntax error or an unknown variable is a
    config error naming the rule, not a surprise at the first matching request."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}.when must be a CEL expression (a string)")
    from ..types.extras import require

    cel = require("cel", "gateway", "CEL rule conditions")
    try:
        program = cel.compile(text)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{where}.when does not compile: {first}") from None
    used = set(program.references()["variables"])
    unknown = sorted(used - CEL_VARIABLES)
    if unknown:
        raise ConfigError(
            f"{where}.when uses unknown variables {unknown}; "
            f"available: {', '.join(sorted(CEL_VARIABLES))}"
        )
    return program, "args" in used


@dataclass(frozen=True)
class Caller:
    """Who calls, as the gateway's rules see it: a name and groups (``anonymous`` when the
    gateway has no auth).  Made from an auth :class:`~mcpkit.auth.principal.Principal`
    (or a header-trusting mode); a separate name because it carries rule-facing fields
    (groups, the virtual server) rather than a token's identity triple."""

    name: str
    groups: tuple[str, ...] = ()
    claims: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    #: Granted OAuth scopes (jwt mode); per-tool scope checks read them.
    scopes: frozenset[str] = field(default=frozenset(), compare=False, hash=False)
    #: The virtual server (``[[server]]`` name) the request came in on, if any.
    view: str | None = field(default=None, compare=False, hash=False)
    #: The caller's OAuth access token (jwt mode), kept only as the subject of an RFC 8693
    #: exchange (``kind = "token_exchange"``); never sent upstream, never in a repr.
    subject_token: str | None = field(default=None, compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return self.name


ANONYMOUS = Caller("anonymous")


#: The audit outcome of a refusal by a rule whose condition could not be evaluated.
RULE_ERROR = "rule_error"


class Decision(NamedTuple):
    allowed: bool
    reason: str
    #: The deciding rule's name (None: ``default_effect``), for the audit line.
    rule: str | None
    #: The audit outcome of a refusal: ``denied``, or :data:`RULE_ERROR` when a
    #: condition that could not be evaluated decided it.
    outcome: str = "denied"


class _Unevaluable(Exception):
    """A rule's condition raised or gave a non-boolean; the message says why."""


def _any(patterns: tuple[str, ...], value: str) -> bool:
    return any(fnmatchcase(value, p) for p in patterns)


class Authorizer:
    def __init__(self, rules: tuple[Rule, ...], default_effect: str = "allow") -> None:
        self.rules = rules
        self.default_effect = default_effect
        #: The decision without a matching rule (asked on every call without rules).
        self.default = Decision(default_effect == "allow", f"default {default_effect}", None)
        #: No rule and ``default_effect = "allow"``: every request is allowed, by no rule
        #: (decided here once, at config load: the policy point then has nothing to ask).
        self.allows_all = not rules and self.default.allowed

    def decide(
        self,
        principal: Caller,
        method: str,
        name: str | None,
        arguments: dict[str, Any] | None = None,
    ) -> Decision:
        """The first matching rule's effect; ``arguments=None`` means not known yet.

        A refusal that follows a condition which could not be evaluated (a deny rule's,
        taken as matching, or an allow rule's, taken as not matching) is reported as that
        rule's evaluation error, not as a deny."""
        broken: Decision | None = None
        for rule in self.rules:
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
            if rule.condition is not None:
                try:
                    holds = self._holds(rule, principal, method, name, arguments)
                except _Unevaluable as exc:
                    reason = f"rule {rule.name!r} could not be evaluated: {exc}"
                    broken = broken or Decision(False, reason, rule.name, RULE_ERROR)
                    if rule.effect == "allow":
                        continue  # fails closed: the allow does not match
                    return broken
                if not holds:
                    continue
            decision = Decision(
                rule.effect == "allow", f"rule {rule.name!r} {rule.effect}", rule.name
            )
            return decision if decision.allowed or broken is None else broken
        return self.default if self.default.allowed or broken is None else broken

    @staticmethod
    def _holds(
        rule: Rule,
        principal: Caller,
        method: str,
        name: str | None,
        arguments: dict[str, Any] | None,
    ) -> bool:
        if arguments is None and rule.needs_args:
            return rule.effect == "allow"  # undecidable yet: see the module docstring
        context = {
            "principal": principal.name,
            "groups": list(principal.groups),
            "jwt": dict(principal.claims),
            "method": method,
            "name": name or "",
            "args": arguments if isinstance(arguments, dict) else {},
        }
        try:
            value = rule.condition.execute(context)
        except Exception as exc:
            log.info("rule %s: condition failed (%s): fails closed", rule.name, exc)
            raise _Unevaluable(_evaluation_error(exc)) from None
        if not isinstance(value, bool):
            log.info("rule %s: condition gave %r, not a boolean: fails closed", rule.name, value)
            raise _Unevaluable(f"gave {type(value).__name__}, not a boolean")
        return value


def _evaluation_error(exc: Exception) -> str:
    """Why a condition could not be evaluated, in one short line."""
    if isinstance(exc, KeyError) and exc.args:
        return f"no such key {exc.args[0]!r}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    first = text.split(". ")[0]
    return first if len(first) <= 200 else first[:197] + "..."
