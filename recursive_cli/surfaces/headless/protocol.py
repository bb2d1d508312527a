"""The stdin side of Claude Code's stream-json protocol, typed; and the control lines we write.

A client writes one JSON object per line: `user` messages (a prompt each), `control_request`s
(`initialize`, `interrupt`, `set_permission_mode`, `set_model`, …) and `control_response`s to
the requests we send it (`can_use_tool`, `hook_callback`). Every control request is answered
by a `control_response` with its `request_id`: `success` with a `response` object, or `error`
with a message.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ...core.errors import ImageError, StreamLineError
from ...core.images import image_from_bytes
from ...core.messages import Image


class _Line(BaseModel):
    model_config = ConfigDict(extra="allow")


class UserContent(_Line):
    role: str = "user"
    content: str | list[dict[str, Any]] = ""


class UserLine(_Line):
    """A prompt; its content is text, or blocks of which the text and base64 image ones are read."""

    type: Literal["user"]
    message: UserContent
    parent_tool_use_id: str | None = None
    session_id: str | None = None
    uuid: str | None = None  # the host's id for this prompt (echoed as the result's `user_message_uuid`)
    origin: dict[str, Any] | None = None  # the host's stamp; only `{"kind": "human"}` is taken, as in Claude Code

    def human_origin(self) -> dict[str, Any] | None:
        """The origin the result echoes: the host's `{"kind": "human"}` stamp, else none."""
        origin = self.origin
        return {"kind": "human"} if isinstance(origin, dict) and origin.get("kind") == "human" else None

    def text(self) -> str:
        content = self.message.content
        if isinstance(content, str):
            return content
        parts = [str(block.get("text", "")) for block in content if block.get("type") == "text"]
        return "\n\n".join(part for part in parts if part)

    def dropped_blocks(self) -> list[str]:
        """The kinds of content blocks that are neither text nor a base64 image, which we cannot pass on."""
        content = self.message.content
        if isinstance(content, str):
            return []
        return [str(block.get("type")) for block in content
                if block.get("type") != "text" and _base64_source(block) is None]

    def images(self) -> tuple[list[Image], list[str]]:
        """The base64 `image` blocks as images, and a line for each one that is no image we send."""
        content = self.message.content
        images: list[Image] = []
        problems: list[str] = []
        for number, block in enumerate(content if isinstance(content, list) else [], 1):
            source = _base64_source(block)
            if source is None:
                continue
            try:
                raw = base64.b64decode(str(source.get("data", "")), validate=True)
                images.append(image_from_bytes(raw, f"image block {number}"))
            except (ValueError, binascii.Error) as exc:  # (ImageError is a ValueError)
                problems.append(str(exc) if isinstance(exc, ImageError) else f"image block {number} is not base64")
        return images, problems


def _base64_source(block: dict[str, Any]) -> dict[str, Any] | None:
    """The `source` of an `image` block that carries its image inline, as the Agent SDKs send it."""
    source = block.get("source")
    if block.get("type") == "image" and isinstance(source, dict) and source.get("type") == "base64":
        return source
    return None


class ControlRequestLine(_Line):
    """A request from the client; `request["subtype"]` says which."""

    type: Literal["control_request"]
    request_id: str
    request: dict[str, Any]

    @property
    def subtype(self) -> str:
        return str(self.request.get("subtype", ""))


class ResponseBody(_Line):
    subtype: Literal["success", "error"]
    request_id: str
    response: dict[str, Any] | None = None
    error: str | None = None


class ControlResponseLine(_Line):
    """The client's answer to one of our requests."""

    type: Literal["control_response"]
    response: ResponseBody


class CancelLine(_Line):
    type: Literal["control_cancel_request"]
    request_id: str


class KeepAliveLine(_Line):
    type: Literal["keep_alive"]


InboundLine = Annotated[UserLine | ControlRequestLine | ControlResponseLine | CancelLine | KeepAliveLine,
                        Field(discriminator="type")]
_INBOUND: TypeAdapter[Any] = TypeAdapter(InboundLine)


def parse_line(text: str) -> UserLine | ControlRequestLine | ControlResponseLine | CancelLine | KeepAliveLine:
    """One stdin line as a typed message; StreamLineError when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StreamLineError(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StreamLineError("not a JSON object")
    try:
        return _INBOUND.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        kind = data.get("type")
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise StreamLineError(f"bad {kind!r} message: {where}: {first['msg']}") from None


class Initialize(BaseModel):
    """The `initialize` request: hooks to call back, and the TypeScript SDK's prompt, schema and
    MCP server fields."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    hooks: dict[str, list[dict[str, Any]]] | None = None
    system_prompt: str | list[str] | dict[str, Any] | None = Field(default=None, alias="systemPrompt")
    append_system_prompt: str | None = Field(default=None, alias="appendSystemPrompt")
    json_schema: dict[str, Any] | None = Field(default=None, alias="jsonSchema")
    # The TypeScript SDK's MCP servers, sent here instead of `--mcp-config` (`--await-initialize`):
    # the external ones in `.mcp.json`'s shape, and the names of those inside the client's process.
    mcp_servers: dict[str, Any] | None = Field(default=None, alias="mcpServers")
    sdk_mcp_servers: list[str] | None = Field(default=None, alias="sdkMcpServers")
    # The SDKs' `agents=`: subagent definitions in `--agents`' shape (features/subagents).
    agents: dict[str, Any] | None = None
    forward_subagent_text: bool = Field(default=False, alias="forwardSubagentText")
    skills: list[str] | None = None  # the SDKs' `skills=[names]`: only these are offered


def success(request_id: str, response: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response or {}}}


def error(request_id: str, message: str) -> dict[str, Any]:
    return {"type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": message}}


def request(request_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "control_request", "request_id": request_id, "request": payload}


def cancel(request_id: str) -> dict[str, Any]:
    return {"type": "control_cancel_request", "request_id": request_id}
