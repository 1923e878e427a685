"""The official MCP Python SDK (`mcp`) against Herald's `/mcp`: an unauthenticated request is
told where to get a token; with an OAuth access token the client connects over streamable HTTP,
lists the tools and sends an email with `send_email`.

Usage: mcp_client.py BASE_URL ACCESS_TOKEN FROM TO. Prints one JSON object: the tool names and
the sent email's id.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

USER_AGENT = "herald-tests-mcp/1.0"


async def main(base, token, sender, to):
    url = f"{base}/mcp"
    async with httpx2.AsyncClient(headers={"User-Agent": USER_AGENT}) as plain:
        refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Accept": "application/json, text/event-stream"})
        challenge = refused.headers.get("www-authenticate", "")
        assert refused.status_code == 401, refused.text
        assert f'resource_metadata="{base}/.well-known/oauth-protected-resource"' in challenge, challenge
        metadata = (await plain.get(f"{base}/.well-known/oauth-protected-resource")).json()
        assert metadata["authorization_servers"] == [base], metadata

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        result = await client.call_tool(
            "send_email",
            {"from": sender, "to": [to], "subject": "Sent by an agent", "text": "Hello from the MCP server."},
        )
        assert not result.is_error, result
        sent = json.loads(result.content[0].text)
        refused = await client.call_tool("list_segments", {})
    print(json.dumps({"tools": tools, "email_id": sent["id"], "segments_refused": refused.is_error, "segments_answer": refused.content[0].text}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
