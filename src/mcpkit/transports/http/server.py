"""Run an ASGI app on uvicorn, the embedded default, with uvloop/httptools when present."""

from __future__ import annotations

from typing import Any


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def uvicorn_config(app: Any, host: str, port: int, **kw: Any) -> Any:
    import uvicorn

    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": kw.pop("log_level", "warning"),
        "lifespan": "on",
        "loop": "uvloop" if _available("uvloop") else "asyncio",
        "http": "httptools" if _available("httptools") else "h11",
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 10,
    }
    options.update(kw)
    return uvicorn.Config(app, **options)


def serve_uvicorn(app: Any, host: str, port: int, **kw: Any) -> None:
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port, **kw)).run()
