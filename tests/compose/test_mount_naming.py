"""Mount naming options (what a gateway's ``[[upstream]]`` needs): an explicit ``prefix``
(``""`` shared by several children, a name routed to the child that lists it), resource
URIs kept as they are and routed by owner (``keep_uris``), and a name two mounts would
both offer refused at start, naming both.  Through a real in-memory client, both eras."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.server.mount import NameClash, check_names
from mcpkit.types.versions import EraChoice
from support.mcp import first_text

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]


def department(name: str, tool: str, uri: str, template: str | None = None) -> Server:
    """A server with one tool (answering ``{tool}: {text}``), one resource (its text is
    ``{name}-content``), an optional template (``#{number}``), a prompt named after the
    server, and completions of numbers."""
    server = Server(name)

    def run(text: str) -> str:
        return f"{tool}: {text}"

    def sorry(who: str) -> str:
        return f"Sorry from {name}, {who}."

    def completions(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        return [n for n in ("100", "101", "200") if n.startswith(argument["value"])]

    server.tool(run, name=tool)
    server.prompt(sorry, name=f"{name}_sorry")
    server.resource(uri)(lambda: f"{name}-content")
    if template is not None:
        server.resource(template)(lambda number: f"#{number}")
    server.completion(completions)
    return server


def billing() -> Server:
    return department("billing", "invoice", "bill://config", "bill://invoices/{number}")


def support() -> Server:
    return department("support", "ticket", "help://faq")


def front(bill: str, help: str) -> Server:
    """Billing and support mounted with these prefixes, their URIs kept."""
    main = Server("main")
    main.mount(billing(), prefix=bill, keep_uris=True)
    main.mount(support(), prefix=help, keep_uris=True)
    return main


@pytest.mark.parametrize("era", ERAS)
async def test_an_empty_prefix_shared_by_two_mounts(era: EraChoice) -> None:
    async with Client(front("", ""), era=era) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["invoice", "ticket"]
        # each call reaches the mount that lists the name (both prefixes fit)
        assert first_text(await client.call_tool("invoice", {"text": "ada"})) == "invoice: ada"
        assert first_text(await client.call_tool("ticket", {"text": "x"})) == "ticket: x"
        prompt = await client.get_prompt("support_sorry", {"who": "Bo"})
        assert prompt["messages"][0]["content"]["text"] == "Sorry from support, Bo."


@pytest.mark.parametrize("era", ERAS)
async def test_kept_uris_are_routed_by_owner(era: EraChoice) -> None:
    async with Client(front("bill_", "help_"), era=era) as client:
        uris = sorted(r["uri"] for r in await client.list_resources())
        assert uris == ["bill://config", "help://faq"]  # as the children have them
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
        assert templates == ["bill://invoices/{number}"]
        faq = await client.read_resource("help://faq")
        assert faq["contents"][0] == {**faq["contents"][0], "uri": "help://faq"}
        assert faq["contents"][0]["text"] == "support-content"
        one = await client.read_resource("bill://invoices/7")  # by template match
        assert one["contents"][0]["text"] == "#7"
        assert first_text(await client.call_tool("bill_invoice", {"text": "c"})) == "invoice: c"
        done = await client.complete(
            {"type": "ref/resource", "uri": "bill://invoices/{number}"}, "number", "10"
        )
        assert done["completion"]["values"] == ["100", "101"]


async def test_a_shared_name_is_refused_at_start_naming_both() -> None:
    main = Server("main")
    main.mount(support(), prefix="")
    main.mount(support(), namespace="support2", prefix="")
    with pytest.raises(
        NameClash, match=r"'ticket' is offered by both mount 'support' and mount 'support2'"
    ):
        async with main.running():
            pass
    # distinct prefixes: no clash; the parent's own name clashing with a child's is named
    other = Server("other")

    other.tool(lambda subject: subject, name="ticket")

    other.mount(support(), prefix="")
    with pytest.raises(NameClash, match=r"'ticket' is offered by both 'other' itself and mount"):
        await check_names(other)
    fine = Server("fine")
    fine.mount(support(), prefix="a_")
    fine.mount(support(), namespace="b", prefix="b_")
    await check_names(fine)


def test_prefix_and_namespace_checks() -> None:
    main = Server("main")
    with pytest.raises(ValueError, match="namespace"):
        main.mount(support())
    main.mount(support(), prefix="")
    with pytest.raises(ValueError, match="already mounted"):
        main.mount(support(), prefix="x_")  # (the namespace defaults to the child's name)


async def test_a_server_that_ran_before_its_first_mount_stops() -> None:
    """Mounted at run time into a server that had no mount when it started: stopping the
    server stops the child too (its task used to keep the parent running)."""
    main = Server("main")
    with anyio.fail_after(10):
        async with main.running():
            main.mount(support(), prefix="")
            assert (
                first_text(
                    await main.call("tools/call", {"name": "ticket", "arguments": {"text": "a"}})
                )
                == "ticket: a"
            )
