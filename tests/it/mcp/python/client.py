"""Drive an MCP server through `debussy mcp supervise` (or, with BRIDGE_PORT set,
`debussy mcp bridge --port BRIDGE_PORT`) with the Python `mcp` SDK client.

Usage: client.py DEBUSSY STATE_DIR SERVER_COMMAND...

Calls whoami, restart_server, whoami, and prints one JSON object with what it saw.
With LIST_CHANGED_WAIT set, waits that many seconds for `tools/list_changed` (default 10).
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def text_of(result) -> str:
    if result.is_error:
        raise SystemExit(f"tool call failed: {result}")
    return result.content[0].text


async def main() -> None:
    debussy, state_dir, *server = sys.argv[1:]
    port = os.environ.get("BRIDGE_PORT")
    mode = (
        ["bridge", "--port", port, "--stop-daemon-on-exit", "--ready-timeout", "20s"]
        if port
        else ["supervise"]
    )
    params = StdioServerParameters(
        command=debussy,
        args=["mcp", *mode, "--state-dir", state_dir, "--", *server],
    )
    list_changed = asyncio.Event()

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            list_changed.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            names = [tool.name for tool in tools.tools]
            before = json.loads(text_of(await session.call_tool("whoami", {})))
            restarted = json.loads(
                text_of(await session.call_tool("restart_server", {"reason": "python client"}))
            )
            after = json.loads(text_of(await session.call_tool("whoami", {})))
            echo = text_of(await session.call_tool("echo", {"text": "héllo ✓"}))
            try:
                wait = float(os.environ.get("LIST_CHANGED_WAIT", "10"))
                await asyncio.wait_for(list_changed.wait(), timeout=wait)
                heard = True
            except asyncio.TimeoutError:
                heard = False
    print(
        json.dumps(
            {
                "protocol": init.protocol_version,
                "tools_list_changed": bool(
                    init.capabilities.tools and init.capabilities.tools.list_changed
                ),
                "tools": names,
                "before": before,
                "restarted": restarted,
                "after": after,
                "echo": echo,
                "heard_list_changed": heard,
            }
        )
    )


asyncio.run(main())
