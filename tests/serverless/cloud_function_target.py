"""The conformance fixture server as a Cloud Function (``functions-framework --target mcp``).

Serverless mode refuses task-backed tools (nothing outlives the invocation to run them), so
this deployment serves the fixture without them, exactly as a user would have to.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from mcpkit.serverless import cloud_function_handler
from server import server

for _name in [n for n, tool in server.tools.items() if tool.task_support != "forbidden"]:
    server.remove_tool(_name)

mcp = cloud_function_handler(server, name="mcp")
