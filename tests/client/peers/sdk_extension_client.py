"""The official Python SDK as a client of an extension's custom methods.

Run with the SDK's interpreter: ``python sdk_extension_client.py URL MODE`` (MODE: "auto"
or "legacy").  It binds the ``com.example/notes/added`` notification, sends the custom
requests ``com.example/notes/add`` and ``com.example/notes/search`` with
``ClientSession.send_request``, and prints one JSON object of what it got.
"""

# mypy: disable-error-code="misc"
# (the SDK is absent from the project venv: its base classes are Any to mypy)
from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.client import Client, ClientExtension, NotificationBinding
from mcp.types import Request, RequestParams, Result
from pydantic import BaseModel, ConfigDict


class AddParams(RequestParams):
    text: str
    tags: list[str]


class AddNote(Request[AddParams, str]):
    method: str = "com.example/notes/add"


class SearchParams(RequestParams):
    tag: str


class SearchNotes(Request[SearchParams, str]):
    method: str = "com.example/notes/search"


class Note(Result):
    id: int
    text: str
    tags: list[str]


class Found(Result):
    notes: list[dict[str, Any]]


class Added(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int


class Notes(ClientExtension):
    identifier = "com.example/notes"

    def __init__(self) -> None:
        self.added: list[int] = []
        self.arrived = anyio.Event()

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [
            NotificationBinding(
                method="com.example/notes/added", params_type=Added, handler=self.on_added
            )
        ]

    async def on_added(self, params: Added) -> None:
        self.added.append(params.id)
        self.arrived.set()


async def main(url: str, mode: str) -> None:
    notes = Notes()
    async with Client(url, mode=mode, extensions=[notes]) as client:
        session = client.session
        note = await session.send_request(AddNote(params=AddParams(text="sdk", tags=["sdk"])), Note)
        with anyio.fail_after(10):
            await notes.arrived.wait()
        found = await session.send_request(SearchNotes(params=SearchParams(tag="sdk")), Found)
        print(
            json.dumps(
                {
                    "protocol": getattr(session, "protocol_version", None),
                    "note": {"id": note.id, "text": note.text, "tags": note.tags},
                    "added": notes.added,
                    "found": [n["text"] for n in found.notes],
                }
            )
        )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
