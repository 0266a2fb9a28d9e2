"""A tiny MCP server for lathe's tests, Python stdlib only, no network
beyond 127.0.0.1.

stdio (default): newline-delimited JSON-RPC on stdin/stdout.
`--http PORT_FILE`: streamable HTTP (MCP 2025-03-26) on 127.0.0.1, a free
port written to PORT_FILE once listening; POST /mcp answers requests with
application/json, notifications with 202, GET with 405 (no SSE stream).

Tools: `echo` (readOnlyHint; returns its `text`), `slow` (sleeps 30 s unless
cancelled), `crash` (exits the process with status 3 after a line on
stderr), `fail` (isError), `image` (a 1x1 PNG), `big` (150000 chars of
text), `mixed` (a text, a resource_link and an audio block), `boom` (HTTP:
answers with status 500; stdio: a JSON-RPC error), `svg` (a text and an
SVG image), `jpg` (a PNG declared image/jpg), `structured` (only
`structuredContent`), `bigimage` (an image and 200000 chars of text),
`pick` (an input schema with `oneOf` at its top level), `files.read` and
`files_read` (two names that are one once sanitised). `tools/list` is paged,
two tools a page (`nextCursor`). When MOCK_MCP_EVENTS names a file, it
appends `start`, `list`, `call <tool>` and `cancelled <id>` lines to it.
When MOCK_MCP_FAIL_LIST names a file that exists, `tools/list` answers
with an error.
"""

import json
import os
import sys
import threading
import time

EVENTS = os.environ.get("MOCK_MCP_EVENTS")
FAIL_LIST = os.environ.get("MOCK_MCP_FAIL_LIST")
LOCK = threading.Lock()
CANCELLED = set()
PAGE = 2
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def simple(name, description):
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}}


TOOLS = [
    {
        "name": "echo",
        "description": "Returns its text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    },
    simple("slow", "Sleeps 30 s."),
    simple("crash", "Exits the server."),
    simple("fail", "Reports an error."),
    simple("image", "A 1x1 PNG."),
    simple("big", "150000 chars of text."),
    simple("mixed", "A text, a resource link and audio."),
    simple("boom", "The server fails the request."),
    simple("svg", "A text and an SVG image."),
    simple("jpg", "A PNG declared image/jpg."),
    simple("structured", "Only structuredContent."),
    simple("bigimage", "An image and 200000 chars of text."),
    {
        "name": "pick",
        "description": "Picks by id or by path.",
        "inputSchema": {
            "type": "object",
            "oneOf": [
                {"properties": {"id": {"type": "string"}}, "required": ["id"]},
                {"properties": {"path": {"type": "string"}}, "required": ["path"]},
            ],
        },
    },
    simple("files.read", "Reads (dotted name)."),
    simple("files_read", "Reads (underscored name)."),
]


class Boom(Exception):
    """The request fails at the transport (HTTP 500) or as a JSON-RPC error."""


def event(line):
    if EVENTS:
        with LOCK, open(EVENTS, "a") as f:
            f.write(line + "\n")


def text(t, error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if error:
        r["isError"] = True
    return r


def call_tool(req_id, name, args):
    """The result of tools/call; None when cancelled; raises Boom."""
    event("call " + name)
    if name == "echo":
        return text("echo: " + str(args.get("text", "")))
    if name == "slow":
        for _ in range(300):
            if req_id in CANCELLED:
                return None
            time.sleep(0.1)
        return text("slow done")
    if name == "crash":
        sys.stderr.write("mock-mcp: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "fail":
        return text("the page does not exist", error=True)
    if name == "image":
        return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
    if name == "big":
        line = "0123456789" * 9 + "abcdefghi\n"
        return text(line * 1500)
    if name == "mixed":
        return {
            "content": [
                {"type": "text", "text": "here:"},
                {"type": "resource_link", "uri": "file:///docs/guide.md", "name": "guide.md", "mimeType": "text/markdown"},
                {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
            ]
        }
    if name == "boom":
        raise Boom("boom on purpose")
    if name == "svg":
        svg = "PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnLz4="
        return {"content": [{"type": "text", "text": "chart:"}, {"type": "image", "data": svg, "mimeType": "image/svg+xml"}]}
    if name == "jpg":
        return {"content": [{"type": "image", "data": PNG, "mimeType": "image/jpg"}]}
    if name == "structured":
        return {"content": [], "structuredContent": {"temperature": 22.5, "unit": "C"}}
    if name == "bigimage":
        line = "0123456789" * 9 + "abcdefghi\n"
        return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}, {"type": "text", "text": line * 2000}]}
    if name == "pick":
        return text("picked " + json.dumps(args, sort_keys=True))
    if name in ("files.read", "files_read"):
        return text("read by " + name)
    raise KeyError(name)


def handle(msg):
    """The JSON-RPC answer to one message, or None (a notification, or a
    cancelled call). Raises Boom."""
    method = msg.get("method")
    req_id = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mock-mcp", "version": "1"},
        }
    elif method == "tools/list":
        event("list")
        if FAIL_LIST and os.path.exists(FAIL_LIST):
            return {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32603, "message": "tools are not ready"}}
        start = int(params.get("cursor") or 0)
        result = {"tools": TOOLS[start : start + PAGE]}
        if start + PAGE < len(TOOLS):
            result["nextCursor"] = str(start + PAGE)
    elif method == "tools/call":
        try:
            result = call_tool(req_id, params.get("name"), params.get("arguments") or {})
        except KeyError as e:
            return {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32602, "message": "unknown tool " + str(e)}}
        if result is None:
            return None
    elif method == "notifications/cancelled":
        CANCELLED.add(params.get("requestId"))
        event("cancelled " + str(params.get("requestId")))
        return None
    elif method == "ping":
        result = {}
    elif req_id is not None and method is not None:
        return {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "no " + method}}
    else:
        return None
    return {"jsonrpc": "2.0", "id": req_id, "result": result}


def send(msg):
    with LOCK:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def stdio_main():
    def answer(msg):
        try:
            reply = handle(msg)
        except Boom as e:
            reply = {"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": -32603, "message": str(e)}}
        if reply is not None:
            send(reply)

    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg.get("method") == "tools/call":
            threading.Thread(target=answer, args=(msg,), daemon=True).start()
        else:
            answer(msg)


def http_main(port_file):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("mock-mcp http: " + (fmt % args) + "\n")

        def reply(self, status, body=b"", ctype=None):
            self.send_response(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            self.send_header("Mcp-Session-Id", "mock-session")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.reply(405)

        def do_DELETE(self):
            self.reply(200)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            msg = json.loads(self.rfile.read(length) or b"{}")
            if self.headers.get("X-Mock-Token") != os.environ.get("MOCK_MCP_TOKEN", self.headers.get("X-Mock-Token")):
                self.reply(401, b"bad token", "text/plain")
                return
            try:
                answer = handle(msg)
            except Boom:
                self.reply(500, b"internal error on purpose", "text/plain")
                return
            if answer is None:
                # A notification, or a cancelled call nobody waits for.
                self.reply(202)
                return
            self.reply(200, json.dumps(answer).encode(), "application/json")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    event("start")
    sys.stderr.write("mock-mcp: started\n")
    sys.stderr.flush()
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        http_main(sys.argv[2])
    else:
        stdio_main()


main()
