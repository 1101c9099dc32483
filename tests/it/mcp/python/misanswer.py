"""A stdio MCP server (standard library only) that answers `tools/call` under an id
nobody sent: the id it was given plus one million. Everything else it answers as asked."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, id_ = message["method"], message["id"]
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "misanswer", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        id_ = id_ + 1_000_000
        result = {"content": [{"type": "text", "text": "under the wrong id"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()
