"""An MCP server written with the Python `mcp` SDK, for debussy's supervisor and bridge
tests: over stdio, or with `--http PORT` as a streamable-HTTP daemon at
`http://127.0.0.1:PORT/mcp` answering plain JSON.

Tools: echo(text), whoami() -> {"pid", "generation"}.
"""

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("debussy-python-test-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def whoami() -> str:
    """Report this server process's pid and the supervisor's generation number."""
    return json.dumps(
        {"pid": os.getpid(), "generation": os.environ.get("DEBUSSY_MCP_GENERATION")}
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", port=int(sys.argv[2]), json_response=True)
    else:
        server.run()
