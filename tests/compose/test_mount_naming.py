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

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy"]


def billing() -> Server:
    server = Server("billing")

    @server.tool
    def invoice(customer: str) -> str:
        return f"invoice for {customer}"

    @server.resource("bill://config")
    def config() -> str:
        return "billing-config"

    @server.resource("bill://invoices/{number}")
    def one(number: str) -> str:
        return f"invoice #{number}"

    @server.completion
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        return [n for n in ("100", "101", "200") if n.startswith(argument["value"])]

    return server


def support() -> Server:
    server = Server("support")

    @server.tool
    def ticket(subject: str) -> str:
        return f"ticket: {subject}"

    @server.prompt
    def apologise(name: str) -> str:
        return f"Sorry, {name}."

    @server.resource("help://faq")
    def faq() -> str:
        return "support-faq"

    return server


def text(result: Any) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("era", ERAS)
async def test_an_empty_prefix_shared_by_two_mounts(era: str) -> None:
    main = Server("main")
    main.mount(billing(), prefix="", keep_uris=True)
    main.mount(support(), prefix="", keep_uris=True)
    async with Client(main, era=era) as client:
        assert sorted(t["name"] for t in await client.list_tools()) == ["invoice", "ticket"]
        # each call reaches the mount that lists the name (both prefixes fit)
        assert text(await client.call_tool("invoice", {"customer": "ada"})) == "invoice for ada"
        assert text(await client.call_tool("ticket", {"subject": "x"})) == "ticket: x"
        prompt = await client.get_prompt("apologise", {"name": "Bo"})
        assert prompt["messages"][0]["content"]["text"] == "Sorry, Bo."


@pytest.mark.parametrize("era", ERAS)
async def test_kept_uris_are_routed_by_owner(era: str) -> None:
    main = Server("main")
    main.mount(billing(), prefix="bill_", keep_uris=True)
    main.mount(support(), prefix="help_", keep_uris=True)
    async with Client(main, era=era) as client:
        uris = sorted(r["uri"] for r in await client.list_resources())
        assert uris == ["bill://config", "help://faq"]  # as the children have them
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
        assert templates == ["bill://invoices/{number}"]
        faq = await client.read_resource("help://faq")
        assert faq["contents"][0] == {**faq["contents"][0], "uri": "help://faq"}
        assert faq["contents"][0]["text"] == "support-faq"
        one = await client.read_resource("bill://invoices/7")  # by template match
        assert one["contents"][0]["text"] == "invoice #7"
        assert text(await client.call_tool("bill_invoice", {"customer": "c"})) == "invoice for c"
        done = await client.complete(
            {"type": "ref/resource", "uri": "bill://invoices/{number}"}, "number", "10"
        )
        assert done["completion"]["values"] == ["100", "101"]


async def test_resource_updates_keep_their_uri() -> None:
    child = billing()
    main = Server("main")
    main.mount(child, prefix="", keep_uris=True)
    async with (
        Client(main, era="modern") as client,
        client.listen(resource_uris=["bill://config"]) as sub,
    ):
        child.notify_resource_updated("bill://config")
        with anyio.fail_after(5):
            async for note in sub:
                assert note.params["uri"] == "bill://config"
                break


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

    @other.tool
    def ticket(subject: str) -> str:
        return subject

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
