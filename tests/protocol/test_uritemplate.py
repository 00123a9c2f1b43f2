"""Resource URI templates: server/uritemplate (RFC 6570 matching)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpkit.server.uritemplate import (
    MAX_TEMPLATE_LENGTH,
    MAX_URI_LENGTH,
    TemplateError,
    UriTemplate,
    is_template,
)


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/42/data", {"id": "42"}),
        ("test://template/{id}/data", "test://template/a%20b/data", {"id": "a b"}),
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
        ("x://h{#frag}", "x://h#a/b?c", {"frag": "a/b?c"}),
        ("x://h{/seg}", "x://h/abc", {"seg": "abc"}),
        ("x://h{/a}{/b}", "x://h/1/2", {"a": "1", "b": "2"}),
        ("x://h{.ext}", "x://h.json", {"ext": "json"}),
        ("x://h{;lang}", "x://h;lang=en", {"lang": "en"}),
        ("x://s{?q,lang}", "x://s?lang=en&q=a%20b", {"q": "a b", "lang": "en"}),
        ("x://s{?q,lang}", "x://s?q=1", {"q": "1"}),
        ("x://s{?q,lang}", "x://s", {}),
        ("x://s{?q}{&n}", "x://s?q=1&n=2", {"q": "1", "n": "2"}),
        ("x://s{?q}", "x://s?q=a+b&other=1", {"q": "a b"}),
        ("x://u/{user}/repos/{repo}", "x://u/ann/repos/mcp", {"user": "ann", "repo": "mcp"}),
        ("x://a.b(c)[d]/{id}", "x://a.b(c)[d]/7", {"id": "7"}),  # literal metacharacters
    ],
)
def test_matching(template: str, uri: str, expected: dict[str, str]) -> None:
    compiled = UriTemplate.compile(template)
    assert compiled.match(uri) == expected
    assert compiled.template == template


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template//data"),  # empty simple variable
        ("test://template/{id}/data", "test://template/a/b/data"),  # '/' is not in {id}
        ("test://template/{id}/data", "test://template/42/data/extra"),
        ("test://template/{id}/data", "other://template/42/data"),
        ("x://a.b/{id}", "x://aXb/7"),  # '.' in the template is literal
        ("x://h{.ext}", "x://h.a.b"),
        ("x://{id}", "x://a?b"),
        ("x://s{?q}", "x://s#frag"),
        ("x://h{/seg}", "x://h"),
    ],
)
def test_non_matching_uris_give_none(template: str, uri: str) -> None:
    assert UriTemplate.compile(template).match(uri) is None


def test_path_parameter_name_must_match() -> None:
    assert UriTemplate.compile("x://h{;lang}").match("x://h;evil=en") is None


def test_variables_in_order() -> None:
    template = UriTemplate.compile("x://{a}/{+b}{?c,d}")
    assert template.variables == ("a", "b", "c", "d")


@pytest.mark.parametrize(
    "template",
    [
        "x://{a",
        "x://a}",
        "x://{a}}",
        "x://{a b}",
        "x://{a,b}",  # several variables in one path expression
        "x://{a}/{a}",
        "x://s{?q}/tail",
        "x://s{?q}{b}",
        "x://{!a}",
        "x://" + "a" * MAX_TEMPLATE_LENGTH + "{x}",
    ],
)
def test_unsupported_templates_are_refused(template: str) -> None:
    with pytest.raises(TemplateError):
        UriTemplate.compile(template)


def test_is_template() -> None:
    assert is_template("x://{a}")
    assert not is_template("x://plain")
    assert not is_template("x://{only-open")


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    "uri",
    [
        "test://template/" + "a" * 100_000 + "/data",  # would match, but is too long
        "test://template/" + "a" * 100_000,
        "test://template/" + "/" + "," * 100_000,
        "test://template/" + "%" * 100_000 + "/data",
    ],
)
def test_hostile_long_uris_are_refused(uri: str) -> None:
    assert UriTemplate.compile("test://template/{id}/data").match(uri) is None


def test_uri_length_limit_is_inclusive() -> None:
    template = UriTemplate.compile("x://{id}")
    at_limit = "x://" + "a" * (MAX_URI_LENGTH - 4)
    assert template.match(at_limit) == {"id": "a" * (MAX_URI_LENGTH - 4)}
    assert template.match(at_limit + "a") is None


_REDOS = textwrap.dedent(
    """
    import sys
    from mcpkit.server.uritemplate import UriTemplate, MAX_URI_LENGTH
    template, fill, tail = sys.argv[1], sys.argv[2], sys.argv[3]
    compiled = UriTemplate.compile(template)
    prefix = template.split("{", 1)[0]
    uri = prefix + fill * ((MAX_URI_LENGTH - len(prefix) - len(tail)) // len(fill)) + tail
    assert len(uri) <= MAX_URI_LENGTH
    print(compiled.match(uri))
    """
)


def test_hostile_uri_against_multi_variable_template_does_not_hang() -> None:
    # Run in children: a catastrophic regex holds the GIL and cannot be interrupted here.
    # The bound is only "does not hang": a linear matcher needs milliseconds.
    cases = [("date://{year}-{month}-{day}", "-", "/"), ("x://{a}{b}{c}/end", "a", "!")]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _REDOS, *case],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for case in cases
    ]
    deadline = time.monotonic() + 3
    hung = []
    for case, child in zip(cases, children, strict=True):
        try:
            out, err = child.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            hung.append(case[0])
            continue
        assert child.returncode == 0, err
        assert out.strip() == "None"
    assert not hung, f"matching hostile URIs against {hung} did not finish within 3 s"


# --------------------------------------------------------------------------- round trip

_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = set(":/?#[]@!$&'()*+,;=")


def _pct(value: str, allowed: set[str]) -> str:
    return "".join(
        ch if ch in allowed else "".join(f"%{b:02X}" for b in ch.encode()) for ch in value
    )


def expand(parts: list[tuple[str, str]], values: dict[str, str]) -> str:
    """RFC 6570 expansion of our template subset (single values, no explode)."""
    out = []
    for kind, text in parts:
        if kind == "lit":
            out.append(text)
            continue
        op, name = kind, text
        value = values[name]
        if op == "":
            out.append(_pct(value, _UNRESERVED))
        elif op == "+":
            out.append(_pct(value, _UNRESERVED | _RESERVED))
        elif op == "/":
            out.append("/" + _pct(value, _UNRESERVED))
        elif op == ";":
            out.append(f";{name}" + (f"={_pct(value, _UNRESERVED)}" if value else ""))
    return "".join(out)


def template_of(parts: list[tuple[str, str]]) -> str:
    return "".join(text if kind == "lit" else "{" + kind + text + "}" for kind, text in parts)


_VALUE = st.text(alphabet="abcXYZ019-_.~ /:é", min_size=1, max_size=12)
_LITERALS = ["/", "-", ".txt", "/v1/", "_", ".", "=", "@"]


@st.composite
def templates_and_values(draw: st.DrawFn) -> tuple[list[tuple[str, str]], dict[str, str]]:
    parts: list[tuple[str, str]] = [("lit", "x://host/")]
    values: dict[str, str] = {}
    count = draw(st.integers(1, 3))
    for index in range(count):
        op = draw(st.sampled_from(["", "/", ";"] + (["+"] if index == count - 1 else [])))
        name = f"v{index}"
        value = draw(_VALUE)
        if op == "+":
            value = value.replace("?", "").replace("#", "") or "p"
        parts.append((op, name))
        values[name] = value
        if index < count - 1 or draw(st.booleans()):
            parts.append(("lit", draw(st.sampled_from(_LITERALS))))
    return parts, values


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(templates_and_values())
def test_every_expansion_matches_and_re_expands_to_the_same_uri(
    case: tuple[list[tuple[str, str]], dict[str, str]],
) -> None:
    parts, values = case
    uri = expand(parts, values)
    found = UriTemplate.compile(template_of(parts)).match(uri)
    assert found is not None, (template_of(parts), uri)
    # the split may differ from ours when the template is ambiguous, but it must describe
    # the same URI
    assert expand(parts, found) == uri, (template_of(parts), uri, found)


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("file:///{name}.txt", "file:///notes.txt.txt", {"name": "notes.txt"}),
        ("etc://{+path}.conf", "etc://nginx.conf.d/site.conf", {"path": "nginx.conf.d/site"}),
        ("x://{a}ab", "x://cabab", {"a": "cab"}),
    ],
)
def test_value_containing_the_following_literal(
    template: str, uri: str, expected: dict[str, str]
) -> None:
    assert UriTemplate.compile(template).match(uri) == expected
