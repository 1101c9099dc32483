"""A stdio MCP server written with the Python `mcp` SDK, for debussy's supervisor tests.

Tools: echo(text), whoami() -> {"pid", "generation"}.
"""

import json
import os

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
    server.run()
