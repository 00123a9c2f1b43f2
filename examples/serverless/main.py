"""Google Cloud Functions (2nd gen) entry point; Cloud Run runs the same with this command.

Deploy: ``gcloud functions deploy mcp --gen2 --runtime python312 --entry-point mcp
--trigger-http --set-env-vars MCPKIT_SEALING_KEYS=...`` with a ``requirements.txt`` of
``mcpkit[serverless]``.  Locally::

    MCPKIT_SEALING_KEYS=dev functions-framework --target mcp --source main.py \
        --host 127.0.0.1 --port 8080

and point an MCP client at ``http://127.0.0.1:8080/mcp``.
"""

from __future__ import annotations

from mcpkit.serverless import cloud_function_handler
from server import server

mcp = cloud_function_handler(server, name="mcp")
