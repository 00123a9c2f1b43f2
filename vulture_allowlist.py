# Names vulture cannot see used from inside src/ (`make lint` runs `vulture`, configured in
# pyproject.toml).  Every line is public API that users call, a name another library calls
# by protocol, or a field that is read as data; anything else that vulture finds is dead
# code and goes.  A new line here needs one of those reasons, under its heading.
# ruff: noqa
# fmt: off
_ = object()

# --- Module hooks: the lazy facades of mcpkit, mcpkit.auth, mcpkit.server, server.schema
__getattr__
__dir__

# --- Libraries call these by name
# httpx.Auth (auth/client/auth.py)
requires_request_body
requires_response_body
_.async_auth_flow
_.sync_auth_flow
# httpcore's network backend (auth/client/ssrf.py)
_.connect_unix_socket
# asyncio.Protocol and the httptools parser (transports/http11.py, stdio_io.py, http/server.py)
_.eof_received
_.on_header
_.on_body
_.on_message_complete
_.writelines
# prometheus_client's collector protocol (gateway/metrics.py)
_.collect
# uvicorn's server hook, overridden to keep signals for the host page and the test client
_.capture_signals
# uvicorn.Server's own flag: set, it stops the server (host page, test client)
_.should_exit
# pytest plugin hooks and fixture (testing/plugin.py, entry point pytest11)
pytest_addoption
pytest_generate_tests
mcp_client
# inspect reads these on generated OpenAPI tool functions (compose/openapi.py)
_.__signature__
_.__annotations__
# anyio.from_thread.check_cancelled reads it in a worker thread (runtime/threads.py)
_.current_cancel_scope

# --- Middleware hooks: the dispatcher looks them up per operation (server/middleware)
_.on_call_tool
_.on_read_resource
_.on_get_prompt
_.on_list_tools
_.on_list_resources
_.on_list_resource_templates
_.on_list_prompts
_.on_complete

# --- Wire and data fields, read by users and by model_dump / asdict
token68  # auth/challenge.py: a parsed WWW-Authenticate challenge
_.token68
grant_types_supported  # auth/client/metadata.py
websiteUrl  # client/models.py: the result models mirror the schema's member names
inputSchema
outputSchema
mimeType
uriTemplate
resultType
ttlMs
cacheScope
hasMore
supportedVersions
supported_versions
stopReason
stop_reason  # host/models/base.py
_.hits  # client/cache.py statistics
_.misses
lifespan_state  # server/lifespan.py: what the lifespan yielded, for handlers
_.lifespan_state
params_type  # types/methods.py: schema names, held to the schemas by a test
request_refresh_tokens  # auth/client/grants.py: a Registration keyword, read by .get()

# The config files' schemas (gateway/schema.py, host/schema.py): each field is a key
# pydantic reads from the file; on_state_error is also the rate-limit rule's field
_.on_state_error
_.rate_limit
_.callback_port
_.base_url_snake
_.api_key_env_snake
_.max_tokens_snake
_.mcp_servers

# --- Public API (documented in README/docs, exercised by tests)
_.require_tool  # auth.BearerAuth
_.set_logging_level  # client.Client
_.wakeups  # runtime.threads.WorkerPool
_.notify_roots_changed
_.list_tools_page
_.list_prompts_page
_.list_resources_page
_.list_resource_templates_page
_.start_tool_task
_.wait_ready  # host.connection
_.for_tool  # host.policy
validate_request_headers  # protocol.headers: the whole check, for any caller
TESTED_ANYIO_MAJOR  # runtime.compat: the pin pyproject is tested against
_.enable_tool_search  # server.Server
_.transform_tool
_.remove_tool
_.add_resource
_.client_supports  # server.Context
_.start_task
_.handles
_.close_sse_stream
_.mint  # server.handles
rotate  # server.keys: key rotation for operators
_.disable  # server.visibility
_.visibility_filter
_.assert_done  # testing.responder
_.assert_pass_rate  # testing.evals: an eval report's assertion
_.stderr_tail  # transports.client_stdio
_.notification_handler  # server.Server: an extension's client notifications
_.get_skill  # client.Client: the Skills extension

# --- Registered by decorator: the server's method table calls them (server/skills.py)
skills_list
skills_get
directory_read
