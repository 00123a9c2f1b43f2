"""Cloud Run (or any container platform): the plain ASGI app in serverless mode.

Container command: ``uvicorn cloud_run:app --host 0.0.0.0 --port $PORT`` with
``MCPKIT_SEALING_KEYS`` set on the service (Cloud Run routes requests by the
``*.run.app`` host, which the default allow-list accepts; add custom domains with
``MCPKIT_ALLOWED_HOSTS``).  Responses stream on Cloud Run, so listen works.  Locally:
``MCPKIT_SEALING_KEYS=dev uvicorn cloud_run:app --host 127.0.0.1 --port 8080``.
"""

from __future__ import annotations

from mcpkit.serverless import serverless_app
from server import server

app = serverless_app(server)
