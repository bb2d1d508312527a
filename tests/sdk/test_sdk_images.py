"""An image content block from Claude's Python Agent SDK reaches the model (issue 30)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from clitools import require
from imagekit import png_bytes

from .conftest import AgentCli

sdk = require("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query  # noqa: E402


def test_an_image_block_from_the_sdk_reaches_the_request_body(agent_cli: AgentCli) -> None:
    agent_cli.server.add({"text": "a red pixel"})
    data = base64.b64encode(png_bytes()).decode()

    async def prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}}

    async def run() -> list[Any]:
        opts = ClaudeAgentOptions(cli_path=str(agent_cli.path), cwd=str(agent_cli.workspace), env=agent_cli.env())
        return [message async for message in query(prompt=prompts(), options=opts)]

    messages = asyncio.run(asyncio.wait_for(run(), 60))

    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["a red pixel"]
    user = agent_cli.server.requests[0].body["messages"][1]
    assert user["content"] == [{"type": "text", "text": "what is in this picture?"},
                               {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]
    agent_cli.lines()
