"""Who may call what in a :class:`~.host.Host`: the caller check, the policy and the
person's consent, with an audit line for every refusal.

* :func:`check_caller`: the model calls only model-visible tools; an MCP App view only its
  own server's app-visible tools.
* :func:`authorize_tool`: the :class:`~.policy.Policy` decides (``deny`` never reaches the
  server, ``allow`` runs); ``ask`` asks the person through the host's
  :class:`~.interaction.Interaction`, unless the person started the call or remembered
  their answer for this very tool (its fingerprint).
* :func:`authorize_app_action`: the same for what a view asks of the host (``ui/message``,
  ``ui/open-link``, an extension's method), named ``server:action``.

Each reads the host's ``policy``, ``audit`` and ``interaction`` when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .apps import callable_by_app
from .interaction import ToolDenied
from .policy import ConsentDecision, ConsentRequest, Permission, tool_fingerprint
from .tools import HostTool

if TYPE_CHECKING:
    from .host import Host

__all__ = ["authorize_app_action", "authorize_tool", "check_caller"]


def check_caller(host: Host, tool: HostTool, origin: str, app_server: str | None) -> None:
    reason = None
    if origin == "model" and not tool.for_model:
        reason = "this tool is only for its app, not for the model"
    elif origin == "app" and (app_server != tool.server or not callable_by_app(tool.tool)):
        reason = "an app may only call its own server's app-visible tools"
    if reason is not None:
        host.audit.record(
            "tool",
            tool.server,
            tool.qualified_name,
            origin=origin,
            decision="denied",
            by="policy",
        )
        raise ToolDenied(tool.qualified_name, reason)


async def authorize_tool(
    host: Host, tool: HostTool, args: dict[str, Any], origin: str
) -> tuple[str, str]:
    """(decision, by) for a call that may run; raises :class:`ToolDenied`."""
    permission = host.policy.permission(tool.server, tool.qualified_name)

    def refuse(decision: str, by: str, reason: str) -> ToolDenied:
        host.audit.record(
            "tool",
            tool.server,
            tool.qualified_name,
            origin=origin,
            decision=decision,
            by=by,
            arguments=args,
        )
        return ToolDenied(tool.qualified_name, reason)

    if permission is Permission.DENY:
        raise refuse("denied", "policy", "denied by policy")
    if permission is Permission.ALLOW:
        return ("allowed", "policy")
    if origin == "user":
        return ("approved", "user")  # the person asked for this very call
    fingerprint = tool_fingerprint(tool.tool)
    if host.policy.remembered(tool.server, tool.name, fingerprint):
        return ("approved", "remembered")
    request = ConsentRequest(
        server=tool.server,
        tool=tool.name,
        qualified_name=tool.qualified_name,
        arguments=args,
        origin=origin,
        description=tool.description,
        annotations=tool.annotations,
        flags=tool.flags,
    )
    raw = await host.interaction.consent(request)
    decision = raw if isinstance(raw, ConsentDecision) else ConsentDecision(bool(raw))
    if not decision.approved:
        raise refuse("declined", "user", decision.reason or "the user declined")
    if decision.remember:
        host.policy.remember(tool.server, tool.name, fingerprint)
    return ("approved", "user")


async def authorize_app_action(
    host: Host,
    server: str,
    action: str,
    args: dict[str, Any],
    description: str,
    *,
    audit_kind: str,
    always_ask: bool = False,
) -> bool:
    """Whether ``server``'s app may do ``action`` (a ``ui/`` method): its permission
    decides (``always_ask``: ``allow`` asks too); every outcome is audited; raises
    :class:`ToolDenied` when refused.  True when the person approved and asked to
    remember it."""
    name = f"{server}:{action}"  # never an exposed tool name (those have no '/')
    permission = host.policy.permission(server, name)

    def audit(decision: str, by: str) -> None:
        host.audit.record(
            audit_kind, server, name, origin="app", decision=decision, by=by, arguments=args
        )

    if permission is Permission.DENY:
        audit("denied", "policy")
        raise ToolDenied(name, "denied by policy")
    if permission is Permission.ALLOW and not always_ask:
        audit("allowed", "policy")
        return False
    request = ConsentRequest(
        server=server,
        tool=action,
        qualified_name=name,
        arguments=args,
        origin="app",
        description=description,
    )
    raw = await host.interaction.consent(request)
    decision = raw if isinstance(raw, ConsentDecision) else ConsentDecision(bool(raw))
    if not decision.approved:
        audit("declined", "user")
        raise ToolDenied(name, decision.reason or "the user declined")
    audit("approved", "user")
    return decision.remember
