"""A small FastAPI app for the OpenAPI import tests: path, query, header and cookie
parameters, a JSON body with a nested model and enums, a list answer, a 404 and a 422.
Its answers echo what reached it, so a test checks at the API what the tool sent."""

from __future__ import annotations

from enum import StrEnum

from fastapi import Cookie, FastAPI, Header, HTTPException, Query
from pydantic import BaseModel, Field


class Category(StrEnum):
    tools = "tools"
    toys = "toys"


class Size(BaseModel):
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class NewItem(BaseModel):
    name: str = Field(description="What the item is called")
    category: Category
    size: Size
    tags: list[str] = []


class Item(NewItem):
    id: int


class Echo(BaseModel):
    source: str
    session: str | None
    api_key: str | None
    authorization: str | None


app = FastAPI(title="Shop", version="2.0.0")
ITEMS: dict[int, Item] = {
    1: Item(id=1, name="hammer", category=Category.tools, size=Size(width=3, height=30)),
    2: Item(id=2, name="yoyo", category=Category.toys, size=Size(width=5, height=5)),
}


@app.get("/items/{item_id}", operation_id="get_item", tags=["items"])
def get_item(item_id: int, detail: bool = False) -> Item:
    """One item by id."""
    if item_id not in ITEMS:
        raise HTTPException(404, f"no item {item_id}")
    item = ITEMS[item_id]
    return item.model_copy(update={"tags": [*item.tags, "detailed"]}) if detail else item


@app.get("/items", operation_id="list_items", tags=["items"])
def list_items(category: Category | None = None, limit: int = Query(10, ge=1)) -> list[Item]:
    """Items, optionally of one category."""
    found = [i for i in ITEMS.values() if category is None or i.category == category]
    return found[:limit]


@app.post("/items", operation_id="create_item", status_code=201, tags=["items"])
def create_item(item: NewItem) -> Item:
    """Add an item."""
    created = Item(id=max(ITEMS) + 1, **item.model_dump())
    ITEMS[created.id] = created
    return created


@app.post("/orders/{item_id}", operation_id="order", tags=["orders"])
def order(item_id: int, quantity: int) -> dict[str, int]:
    """Order an item; more than 3 is refused by the API itself (422)."""
    if quantity > 3:
        raise HTTPException(422, "at most 3 per order")
    return {"item_id": item_id, "quantity": quantity}


@app.get("/echo", operation_id="echo", tags=["debug"])
def echo(
    x_source: str = Header(),
    session: str | None = Cookie(None),
    x_api_key: str | None = Header(None),
    authorization: str | None = Header(None),
) -> Echo:
    """What headers and cookies reached the API."""
    return Echo(source=x_source, session=session, api_key=x_api_key, authorization=authorization)


@app.delete("/internal/reset", operation_id="reset", tags=["internal"])
def reset() -> dict[str, bool]:
    return {"reset": True}
