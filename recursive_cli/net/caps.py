"""How much of what a network peer sends we hold at once: one cap for every line and message.

A model server or an MCP server chooses how long its lines are. Whatever reads a peer's bytes
line by line or message by message — an event-stream line or event (`sse.py`, for the model
APIs and for MCP over HTTP), a body read whole (`http1.py`), an MCP stdio message
(features/mcp/stdio.py) — stops at LINE_CAP and reports the peer, instead of letting it fill
our memory. 64 MiB is far above any real answer (a model's longest reply is a few MB of JSON).
"""

from __future__ import annotations

LINE_CAP = 64 << 20  # bytes of one line, event or whole body from a peer


def mib(size: int) -> str:
    """`size` bytes in MiB, for messages: `64 MiB`."""
    return f"{size / (1 << 20):g} MiB"
