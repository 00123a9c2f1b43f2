-- wrk script for the mcpkit benchmark: POST one MCP request per call, a fresh JSON-RPC id
-- each time (ids must be unique in a legacy session).
-- usage: wrk -t1 -cC -dDs -s mcp.lua URL -- METHOD ERA TOOL SESSION
--   METHOD  tools/call | tools/list
--   ERA     modern (2026-07-28: _meta + Mcp-Method/Mcp-Name) | legacy (2025-11-25 session)
--   TOOL    echo | progress_echo (progress_echo also sends a progressToken: SSE answer)
--   SESSION Mcp-Session-Id for legacy, "-" for none
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"

function init(args)
  local method = args[1] or "tools/call"
  local era = args[2] or "modern"
  local tool = args[3] or "echo"
  local session = args[4] or "-"
  want_progress = tool == "progress_echo"
  responses = 0
  bad = 0
  local meta = ""
  if era == "modern" then
    wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
    wrk.headers["Mcp-Method"] = method
    meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
      .. '"io.modelcontextprotocol/clientCapabilities":{}'
    if tool == "progress_echo" then meta = meta .. ',"progressToken":"p"' end
    meta = meta .. '}'
  else
    wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
    if session ~= "-" and session ~= "" then wrk.headers["Mcp-Session-Id"] = session end
    if tool == "progress_echo" then meta = '"_meta":{"progressToken":"p"}' end
  end
  if method == "tools/call" then
    if era == "modern" then wrk.headers["Mcp-Name"] = tool end
    if meta ~= "" then meta = "," .. meta end
    tail = ',"method":"tools/call","params":{"name":"' .. tool
      .. '","arguments":{"text":"hello world"}' .. meta .. '}}'
  else
    tail = ',"method":"' .. method .. '","params":{' .. meta .. '}}'
  end
  counter = (tid or 0) * 100000000
end

threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. counter .. tail)
end

function response(status, headers, body)
  responses = responses + 1
  if status ~= 200 or not string.find(body, '"result"', 1, true)
    or (want_progress and not string.find(body, "notifications/progress", 1, true)) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local bad_total = 0
  for _, thread in ipairs(threads) do bad_total = bad_total + (thread:get("bad") or 0) end
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d "
      .. "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d bad=%d\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout, bad_total))
end
