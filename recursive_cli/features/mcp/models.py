"""What an MCP server sends us, as typed values: its tools, a call's result, its resources and
its prompts.

Read from the JSON-RPC results as the protocol spells them (camelCase: `inputSchema`,
`structuredContent`, `isError`, `mimeType`, `nextCursor`), whichever transport carried them.
A value of the wrong type is `McpProtocolError` for a result as a whole (a tools list
that is not a list) and is left out for one item (a tool with no name), so one bad entry does
not cost a server all its tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.errors import McpProtocolError

# mcp/http.py's name for it, until that file (the http branch's) says McpProtocolError.
ProtocolError = McpProtocolError


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool as the server lists it (its input schema as given: tools.py checks it; `{}`
    when it gives none)."""

    name: str
    title: str = ""
    description: str = ""
    input_schema: Any = field(default_factory=dict)
    read_only: bool = False  # its annotations' `readOnlyHint`


@dataclass(frozen=True, slots=True)
class Contents:
    """A resource's contents: `text`, or `blob` (base64) when it is binary."""

    uri: str = ""
    mime_type: str = ""
    text: str | None = None
    blob: str = ""


@dataclass(frozen=True, slots=True)
class Content:
    """One block of a tool's result: `text`; `image` or `audio` (base64 `data`, `mime_type`);
    `resource` (embedded `contents`); `resource_link` (`uri`, `name`); or a type of a later
    protocol, kept by name."""

    type: str
    text: str = ""
    data: str = ""
    mime_type: str = ""
    uri: str = ""
    name: str = ""
    contents: Contents | None = None


@dataclass(frozen=True, slots=True)
class CallResult:
    """A `tools/call` result: its content blocks, its structured content (None when it has
    none) and whether the tool failed."""

    content: tuple[Content, ...] = ()
    structured: Any = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource as `resources/list` names it."""

    uri: str
    name: str = ""
    mime_type: str = ""
    description: str = ""


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise McpProtocolError(f"{what} is not a JSON object")
    return value


def _items(result: Any, field: str, what: str) -> list[Any]:
    items = _object(result, what).get(field, [])
    if not isinstance(items, list):
        raise McpProtocolError(f"{what}: `{field}` is not a list")
    return items


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_from(data: Any) -> ServerTool | None:
    """A `tools/list` entry; None when it has no name."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    schema = data.get("inputSchema")
    annotations = data.get("annotations")
    read_only = isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
    return ServerTool(data["name"], _text(data.get("title")), _text(data.get("description")),
                      {} if schema is None else schema, read_only)


def tools_page(result: Any) -> tuple[list[ServerTool], str | None]:
    """One page of `tools/list`: its tools and the cursor of the next page."""
    tools = [tool for tool in map(tool_from, _items(result, "tools", "the tools/list result")) if tool is not None]
    return tools, next_cursor(result)


def resources_page(result: Any) -> tuple[list[Resource], str | None]:
    """One page of `resources/list`: its resources and the cursor of the next page."""
    found = [Resource(item["uri"], _text(item.get("name")), _text(item.get("mimeType")),
                      _text(item.get("description")))
             for item in _items(result, "resources", "the resources/list result")
             if isinstance(item, dict) and isinstance(item.get("uri"), str)]
    return found, next_cursor(result)


def next_cursor(result: dict[str, Any]) -> str | None:
    cursor = result.get("nextCursor")
    return cursor if isinstance(cursor, str) and cursor else None


def contents_from(data: Any) -> Contents:
    if not isinstance(data, dict):
        return Contents(text="")
    text = data.get("text")
    return Contents(_text(data.get("uri")), _text(data.get("mimeType")), text if isinstance(text, str) else None,
                    _text(data.get("blob")))


def content_from(data: Any) -> Content:
    """One content block of a result (a block that is not an object reads as an unknown one)."""
    if not isinstance(data, dict):
        return Content("unknown")
    kind = _text(data.get("type")) or "unknown"
    contents = contents_from(data.get("resource")) if kind == "resource" else None
    return Content(kind, _text(data.get("text")), _text(data.get("data")), _text(data.get("mimeType")),
                   _text(data.get("uri")), _text(data.get("name")), contents)


def call_result(result: Any) -> CallResult:
    """A `tools/call` result."""
    blocks = tuple(content_from(block) for block in _items(result, "content", "the tools/call result"))
    return CallResult(blocks, result.get("structuredContent"), result.get("isError") is True)


def read_result(result: Any) -> list[Contents]:
    """The contents of a `resources/read` result."""
    return [contents_from(item) for item in _items(result, "contents", "the resources/read result")]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class ServerPrompt:
    """One prompt (a message template) as the server lists it."""

    name: str
    title: str = ""
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


def prompts_page(result: Any) -> tuple[list[ServerPrompt], str | None]:
    """One page of `prompts/list`: its prompts (those with a name) and the next page's cursor."""
    found: list[ServerPrompt] = []
    for item in _items(result, "prompts", "the prompts/list result"):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            continue
        arguments = tuple(PromptArgument(arg["name"], _text(arg.get("description")), arg.get("required") is True)
                          for arg in item.get("arguments") or [] if isinstance(arg, dict)
                          and isinstance(arg.get("name"), str))
        found.append(ServerPrompt(item["name"], _text(item.get("title")), _text(item.get("description")), arguments))
    return found, next_cursor(result)


def prompt_messages(result: Any) -> list[tuple[str, Content]]:
    """The messages of a `prompts/get` result: (role, content block) each."""
    messages = _items(result, "messages", "the prompts/get result")
    return [(_text(m.get("role")) or "user", content_from(m.get("content"))) for m in messages if isinstance(m, dict)]
