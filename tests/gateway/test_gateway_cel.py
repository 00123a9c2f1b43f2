"""Policy rules with CEL conditions on token claims and tool arguments, and resources and
templates filtered by the same rules, over real HTTP against a gateway process.

The front takes JWTs (a JWKS file, like test_gateway_policy) so that ``jwt.*`` claims
exist; the upstream is the echo server behind prefix ``e_``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import gwkit
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from mcpkit.gateway.config import ConfigError, parse_config
from mcpkit.gateway.policy import Authorizer, Caller

ISSUER = "https://idp.cel-tests.invalid/"
RESOURCE = "https://gateway.cel-tests.invalid/mcp"

RULES = """
[[rule]]
name = "big-blobs"
effect = "deny"
methods = ["tools/call"]
names = ["e_blob"]
when = "args.size > 100"

[[rule]]
name = "admins-add-tools"
effect = "allow"
methods = ["tools/call"]
names = ["e_add_tool"]
when = "'admin' in jwt.roles"

[[rule]]
name = "nobody-else-adds-tools"
effect = "deny"
methods = ["tools/call"]
names = ["e_add_tool"]

[[rule]]
name = "no-etc"
effect = "deny"
methods = ["tools/call"]
names = ["e_touch"]
when = "args.uri.startsWith('file:///etc')"

[[rule]]
name = "items-for-staff"
effect = "deny"
methods = ["resources/read"]
names = ["echo://e/items/*"]
when = "!('staff' in groups)"
"""


@pytest.fixture(scope="module")
def key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "cel-key"})


def token(key: RSAKey, sub: str, **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": sub, "iss": ISSUER, "aud": RESOURCE, "iat": now, "exp": now + 300, **claims}
    return jwt.encode({"alg": "RS256", "kid": key.kid}, body, key)


@pytest.fixture(scope="module")
def gateway(key: RSAKey, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    jwks = log_dir / "jwks.json"
    jwks.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    upstream = gwkit.start_upstream("e", log_dir)
    stack.append(upstream)
    config = (
        f'[gateway]\nstate = "memory:"\naudit_log = "{log_dir / "audit.jsonl"}"\n'
        f'[auth]\nmode = "jwt"\njwks_file = "{jwks}"\nissuer = "{ISSUER}"\n'
        f'resource = "{RESOURCE}"\n'
        + RULES
        + gwkit.toml_upstream("e", url=upstream.url, prefix="e_")
    )
    gw = gwkit.start_gateway("gateway", log_dir, config)
    stack.append(gw)
    return gw


def call(gw: gwkit.Proc, who: str, tool: str, arguments: dict[str, Any]) -> gwkit.Reply:
    return gwkit.call(gw.url, "tools/call", {"name": tool, "arguments": arguments}, token=who)


def test_a_condition_on_arguments(gateway: gwkit.Proc, key: RSAKey, log_dir: Path) -> None:
    alice = token(key, "alice")
    assert call(gateway, alice, "e_blob", {"size": 10}).text() == "x" * 10
    refused = call(gateway, alice, "e_blob", {"size": 1000})
    assert refused.status == 403 and "big-blobs" in refused.error["message"]
    # listed all the same: some calls of it are allowed
    listed = gwkit.call(gateway.url, "tools/list", token=alice).result["tools"]
    assert "e_blob" in {t["name"] for t in listed}
    lines = [json.loads(x) for x in (log_dir / "audit.jsonl").read_text().splitlines()]
    denied = [x for x in lines if x["name"] == "e_blob" and x["outcome"] == "denied"]
    assert denied and denied[-1]["rule"] == "big-blobs"


def test_a_condition_on_claims(gateway: gwkit.Proc, key: RSAKey) -> None:
    admin = token(key, "root", roles=["admin"])
    user = token(key, "bob", roles=["user"])
    assert call(gateway, admin, "e_add_tool", {"name": "extra"}).status == 200
    refused = call(gateway, user, "e_add_tool", {"name": "extra"})
    assert refused.status == 403 and "nobody-else-adds-tools" in refused.error["message"]
    names = {t["name"] for t in gwkit.call(gateway.url, "tools/list", token=user).result["tools"]}
    assert "e_add_tool" not in names and "e_whoami" in names
    no_roles = token(key, "carol")  # jwt.roles missing: the allow rule fails closed
    assert call(gateway, no_roles, "e_add_tool", {"name": "x"}).status == 403


def test_a_condition_that_cannot_be_evaluated_fails_closed(
    gateway: gwkit.Proc, key: RSAKey
) -> None:
    alice = token(key, "alice")
    assert call(gateway, alice, "e_touch", {"uri": "echo://e/info"}).text() == "echo://e/info"
    assert call(gateway, alice, "e_touch", {"uri": "file:///etc/passwd"}).status == 403
    missing = call(gateway, alice, "e_touch", {})  # args.uri cannot be read: deny matches
    assert missing.status == 403 and "no-etc" in missing.error["message"]


def test_an_evaluation_error_is_reported_and_audited_as_one(
    gateway: gwkit.Proc, key: RSAKey, log_dir: Path
) -> None:
    alice = token(key, "alice")
    denied = call(gateway, alice, "e_touch", {"uri": "file:///etc/passwd"})
    assert "could not be evaluated" not in denied.error["message"]  # a real deny
    missing = call(gateway, alice, "e_touch", {})
    assert missing.status == 403
    assert "rule 'no-etc' could not be evaluated: no such key 'uri'" in missing.error["message"]
    # an allow rule that cannot be evaluated: the refusal names it, not the deny after it
    carol = call(gateway, token(key, "carol"), "e_add_tool", {"name": "x"})
    assert carol.status == 403
    assert (
        "rule 'admins-add-tools' could not be evaluated: no such key 'roles'"
        in (carol.error["message"])
    )
    lines = [json.loads(x) for x in (log_dir / "audit.jsonl").read_text().splitlines()]
    touches = [(x["outcome"], x.get("rule")) for x in lines if x["name"] == "e_touch"]
    assert ("denied", "no-etc") in touches
    assert ("rule_error", "no-etc") in touches
    adds = [(x["outcome"], x.get("rule")) for x in lines if x["name"] == "e_add_tool"]
    assert ("rule_error", "admins-add-tools") in adds


def test_the_guides_sample_rule_lets_a_call_without_the_argument_through() -> None:
    guide = Path(__file__).parents[2] / "docs" / "guides" / "gateway.md"
    when = re.search(r'^when = "(.*)"\s+# CEL', guide.read_text(), re.M)
    assert when is not None
    rule = {"name": "exports", "effect": "deny", "methods": ["tools/call"], "when": when[1]}
    data = {"upstream": [{"name": "a", "url": "http://x/mcp"}], "rule": [rule]}
    authorizer = Authorizer(parse_config(data).rules)
    finance = Caller("fin", claims={"roles": ["finance"]})
    assert authorizer.decide(finance, "tools/call", "fs_export", {}).allowed
    assert authorizer.decide(finance, "tools/call", "fs_export", {"rows": 10}).allowed
    assert not authorizer.decide(finance, "tools/call", "fs_export", {"rows": 20000}).allowed
    assert not authorizer.decide(Caller("bob"), "tools/call", "fs_export", {}).allowed


def test_resources_and_templates_are_filtered_by_the_same_rules(
    gateway: gwkit.Proc, key: RSAKey
) -> None:
    staff = token(key, "sam", groups=["staff"])
    guest = token(key, "gus", groups=["guests"])

    def templates(who: str) -> set[str]:
        reply = gwkit.call(gateway.url, "resources/templates/list", token=who)
        return {t["uriTemplate"] for t in reply.result["resourceTemplates"]}

    assert "echo://e/items/{id}" in templates(staff)
    assert "echo://e/items/{id}" not in templates(guest)
    read = gwkit.call(gateway.url, "resources/read", {"uri": "echo://e/items/7"}, token=guest)
    assert read.status == 403
    ok = gwkit.call(gateway.url, "resources/read", {"uri": "echo://e/items/7"}, token=staff)
    assert ok.result["contents"][0]["text"] == "item 7 of e"
    info = gwkit.call(gateway.url, "resources/list", token=guest).result["resources"]
    assert [r["uri"] for r in info] == ["echo://e/info"]


@pytest.mark.parametrize(
    ("when", "complaint"),
    [
        ("args.size >", "rule\\[0\\] \\(bad\\)\\.when does not compile"),
        ("request.size > 1", "unknown variables \\['request'\\]"),
        ("", "must be a CEL expression"),
    ],
)
def test_a_condition_that_does_not_compile_is_a_config_error(when: str, complaint: str) -> None:
    data = {
        "upstream": [{"name": "a", "url": "http://x/mcp"}],
        "rule": [{"name": "bad", "effect": "deny", "when": when}],
    }
    with pytest.raises(ConfigError, match=complaint):
        parse_config(data)
