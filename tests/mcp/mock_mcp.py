"""A tiny stdio MCP server for lathe's tests (newline-delimited JSON-RPC).

Tools: `echo` (readOnlyHint; returns its `text`), `slow` (sleeps 30 s unless
cancelled), `crash` (exits the process with status 3 after a line on
stderr), `fail` (isError), `image` (a 1x1 PNG). When MOCK_MCP_EVENTS names a
file, it appends `start`, `call <tool>` and `cancelled <id>` lines to it.
"""

import json
import os
import sys
import threading
import time

EVENTS = os.environ.get("MOCK_MCP_EVENTS")
LOCK = threading.Lock()
CANCELLED = set()
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

TOOLS = [
    {
        "name": "echo",
        "description": "Returns its text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    },
    {"name": "slow", "description": "Sleeps 30 s.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exits the server.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail", "description": "Reports an error.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "image", "description": "A 1x1 PNG.", "inputSchema": {"type": "object", "properties": {}}},
]


def event(line):
    if EVENTS:
        with LOCK, open(EVENTS, "a") as f:
            f.write(line + "\n")


def send(msg):
    with LOCK:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def text(t, error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if error:
        r["isError"] = True
    return r


def call(req_id, name, args):
    event("call " + name)
    if name == "echo":
        result = text("echo: " + str(args.get("text", "")))
    elif name == "slow":
        for _ in range(300):
            if req_id in CANCELLED:
                return
            time.sleep(0.1)
        result = text("slow done")
    elif name == "crash":
        sys.stderr.write("mock-mcp: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "fail":
        result = text("the page does not exist", error=True)
    elif name == "image":
        result = {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
    else:
        send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32602, "message": "unknown tool " + name}})
        return
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def main():
    event("start")
    sys.stderr.write("mock-mcp: started\n")
    sys.stderr.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method = msg.get("method")
        req_id = msg.get("id")
        params = msg.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": req_id,
                    "result": {
                        "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "mock-mcp", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            threading.Thread(
                target=call, args=(req_id, params.get("name"), params.get("arguments") or {}), daemon=True
            ).start()
        elif method == "notifications/cancelled":
            CANCELLED.add(params.get("requestId"))
            event("cancelled " + str(params.get("requestId")))
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": req_id, "result": {}})
        elif req_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "no " + method}})


main()
