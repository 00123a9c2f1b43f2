"""The "everything" fixture server for the official MCP conformance suite.

Exposes exactly the tools, resources and prompts the suite calls, for both protocol
revisions.  Serve it with::

    mcpkit serve tests/conformance/server.py --http --port 3001
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

import anyio
from pydantic import Field

from mcpkit import Audio, Context, EmbeddedResource, Image, McpError, Server, ToolResult

TEST_IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
    "AAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

server = Server(
    "mcpkit-conformance-server",
    "1.0.0",
    instructions="Fixture server for the MCP conformance suite.",
)

# --------------------------------------------------------------------------- core tools
# test_simple_text must stay first: header-validation scenarios call tools[0] with {}.


@server.tool(inline=True)  # quick and non-blocking: on the loop, no thread hop
def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> Image:
    """Tests image content response."""
    return Image(TEST_IMAGE_BASE64, "image/png")


@server.tool
def test_audio_content() -> Audio:
    """Tests audio content response."""
    return Audio(TEST_AUDIO_BASE64, "audio/wav")


@server.tool
def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response."""
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@server.tool
def test_multiple_content_types() -> list[Any]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        {"type": "text", "text": "Multiple content types test:"},
        Image(TEST_IMAGE_BASE64, "image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        ),
    ]


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
def test_error_handling() -> ToolResult:
    """Tests error response handling."""
    return ToolResult("This tool intentionally returns an error for testing", is_error=True)


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications."""
    await ctx.report_progress(0, 100, "Starting")
    await anyio.sleep(0.05)
    await ctx.report_progress(50, 100, "Halfway")
    await anyio.sleep(0.05)
    await ctx.report_progress(100, 100, "Done")
    return "Progress tool completed"


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)."""
    result = await ctx.sample(prompt, max_tokens=100)
    content = result.get("content", {})
    text = content.get("text", "") if isinstance(content, dict) else str(content)
    return f"LLM response: {text}"


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)."""
    result = await ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.get('action')}, content={result.get('content')}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)."""
    result = await ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema improvements (SEP-1330)."""
    result = await ctx.elicit(
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(**arguments: Any) -> str:
    return f"Received: {sorted(arguments)}"


@server.tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "Mirrored into the Mcp-Param-Region header",
                "x-mcp-header": "Region",
            }
        },
    }
)
def test_x_mcp_header(region: str = "<none>") -> str:
    """Echoes an argument that travels in the Mcp-Param-Region header too."""
    return f"region={region}"


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Closes the SSE stream mid-call; the client resumes it (SEP-1699)."""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream(retry_ms=100)
    await anyio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# --------------------------------------------------------------------------- 2026-07-28


@server.tool
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; refuses with -32021 otherwise."""
    if not ctx.client_supports("sampling"):
        raise McpError(
            -32021,
            "This tool requires the client 'sampling' capability",
            {"requiredCapabilities": {"sampling": {}}},
        )
    return "Client declared sampling"


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks for input the 2026-07-28 way (an input_required result, never a request)."""
    result = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    return f"Hello, {result.get('content', {}).get('name', 'stranger')}!"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Logs only when the request asked for a log level."""
    await ctx.info("Logging tool ran")
    return "Logging tool completed"


_dynamic_counter = 0


@server.tool
def test_trigger_tool_change() -> str:
    """Adds and removes a dynamic tool, so listeners get tools/list_changed."""
    global _dynamic_counter
    _dynamic_counter += 1
    name = f"dynamic_tool_{_dynamic_counter}"

    def dynamic() -> str:
        return "dynamic"

    server.tool(dynamic, name=name, description="A short-lived dynamic tool")
    server.remove_tool(name)
    return "Tool list changed"


@server.tool
def test_trigger_prompt_change() -> str:
    """Re-registers a prompt, so listeners get prompts/list_changed."""
    server.notify_prompts_changed()
    return "Prompt list changed"


_NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """MRTR: asks for the user's name through an input_required result."""
    answer = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    name = (answer.get("content") or {}).get("name")
    if answer.get("action") != "accept" or not isinstance(name, str):
        return "No name given."
    return f"Hello, {name}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """MRTR: asks the client's model a question."""
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    content = answer.get("content") or {}
    return f"Model said: {content.get('text', '') if isinstance(content, dict) else content}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """MRTR: asks for the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return f"Client exposed {len(roots)} root(s): " + ", ".join(r.get("uri", "") for r in roots)


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """MRTR: carries handler state across the round trip in requestState."""
    ctx.state.setdefault("token", "state-ok")
    await ctx.elicit(
        "Please confirm",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return f"Confirmed with {ctx.state['token']}"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """MRTR: three input requests in one round."""
    await ctx.ask(
        {
            "user_name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": _NAME_SCHEMA,
                },
            },
            "greeting": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [
                        {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}
                    ],
                    "maxTokens": 50,
                },
            },
            "client_roots": {"method": "roots/list", "params": {}},
        }
    )
    return "All inputs received."


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """MRTR: two rounds, each with its own input request."""
    first = await ctx.elicit("Step 1: What is your name?", _NAME_SCHEMA, key="step1")
    second = await ctx.elicit(
        "Step 2: What is your favorite color?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    name = (first.get("content") or {}).get("name")
    color = (second.get("content") or {}).get("color")
    return f"{name} likes {color}."


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """MRTR: requestState is integrity-protected; a tampered one is rejected."""
    await ctx.elicit(
        "Please confirm",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return "Confirmed."


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """MRTR: only asks for what the client declared it can do."""
    requests: dict[str, Any] = {}
    if ctx.client_supports("sampling"):
        requests["sample"] = {
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
                "maxTokens": 50,
            },
        }
    if ctx.client_supports("elicitation"):
        requests["ask"] = {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": _NAME_SCHEMA,
            },
        }
    if requests:
        await ctx.ask(requests)
    return "Asked only for declared capabilities."


# --------------------------------------------------------------------------- resources


@server.resource(
    "test://static-text",
    name="static_text",
    description="A static text resource for testing",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static_binary",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return base64.b64decode(TEST_IMAGE_BASE64)


@server.resource(
    "test://watched-resource",
    name="watched_resource",
    description="A resource that can be subscribed to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


@server.resource(
    "test://template/{id}/data",
    name="template_data",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


# --------------------------------------------------------------------------- prompts


@server.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[Any]:
    """A prompt that includes an embedded resource."""
    return [
        {
            "role": "user",
            "content": EmbeddedResource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ).to_wire(),
        },
        "Please process the embedded resource above.",
    ]


@server.prompt
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes image content."""
    return [
        {"role": "user", "content": Image(TEST_IMAGE_BASE64, "image/png").to_wire()},
        "Please analyze the image above.",
    ]


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """MRTR on prompts/get: asks which context to use."""
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    return f"Use the following context: {(answer.get('content') or {}).get('context', '')}"


@server.completion
def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
    if ref.get("name") == "test_prompt_with_arguments":
        value = argument.get("value", "")
        return [v for v in ("paris", "park", "party") if v.startswith(value)]
    return []


# --------------------------------------------------------------------------- tasks extension


@server.tool
def greet(name: str) -> str:
    """Greets someone (always synchronous)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Sleeps for `seconds`, then reports; runs as a task when the client supports it."""
    await anyio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds:g}s"


@server.tool(task="required")
async def failing_job() -> ToolResult:
    """A task whose tool fails (completed with isError)."""
    await anyio.sleep(0.5)
    return ToolResult("The job failed as designed", is_error=True)


@server.tool(task="required")
async def protocol_error_job() -> str:
    """A task that ends in a protocol error (status failed)."""
    await anyio.sleep(0.2)
    raise McpError(-32603, "The job hit a protocol-level error as designed")


@server.tool(task="required")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Asks for confirmation inside the task, then 'deletes' the file."""
    answer = await ctx.elicit(
        f"Delete {filename}?",
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        key="confirm",
    )
    confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm")
    return f"Deleted {filename}" if confirmed else f"Kept {filename}"


@server.tool(task="required")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once inside the task."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
        "required": ["name"],
    }
    answers = await ctx.ask(
        {
            "first": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "First?", "requestedSchema": schema},
            },
            "second": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "Second?", "requestedSchema": schema},
            },
        }
    )
    names = [(answers[k].get("content") or {}).get("name") for k in ("first", "second")]
    return "Got " + " and ".join(str(n) for n in names)


@server.tool(task="required", task_start="manual")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for a name synchronously (MRTR), then finishes as a task."""
    answer = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    await ctx.start_task()
    await anyio.sleep(0.1)
    return f"Hello from the task, {(answer.get('content') or {}).get('name')}!"
