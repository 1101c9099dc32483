"""An MCP server written with the Python `mcp` SDK, for debussy's supervisor and bridge
tests: over stdio, or with `--http PORT` as a streamable-HTTP daemon at
`http://127.0.0.1:PORT/mcp` answering plain JSON.

Tools: echo(text), whoami() -> {"pid", "generation"}; with `--grow`, also
added_later() from generation 2 on (a daemon whose tool set changes across a restart).
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


if "--grow" in sys.argv and int(os.environ.get("DEBUSSY_MCP_GENERATION") or "1") >= 2:

    @server.tool()
    def added_later() -> str:
        """A tool only daemons after the first have."""
        return "new"


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if arg != "--grow"]
    if len(args) == 2 and args[0] == "--http":
        server.run("streamable-http", port=int(args[1]), json_response=True)
    else:
        server.run()
