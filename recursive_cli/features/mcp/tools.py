"""MCP servers' tools as our tools, and their results as ours.

Each server tool becomes `mcp__<server>__<tool>` (as Claude Code names them; characters a
model API refuses in a name become `_`), with the server's description (DESCRIPTION_CAP
characters of it, as Claude Code cuts them) and JSON Schema. A name two tools come to (servers
`a.b` and `a_b`, say) is offered from neither (`claim_names`): a call is never sent to a server
it was not meant for. What goes into every model request is bounded (`screen`): a tool whose
input schema is not an object schema or is over SCHEMA_CAP bytes is left out, and so are those
past TOOLS_CAP tools or SERVER_CAP bytes of one server, each said on stderr. Its kind is `read` only when the server marks it `readOnlyHint`, so `read-only` mode allows it and
no other. The subject that `--allow`/`--deny` patterns and the terminal see is the first
string argument the schema declares (a path, a query).

Results: text content as text, structured content as JSON (unless a text block already says
the same), images, audio and other binary content as a short placeholder naming type and
size; `isError` makes an error result. When any server has resources, `list_mcp_resources`
and `read_mcp_resource` reach them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from msgspec import Meta

from ...core.provider import ToolSpec
from ...core.tool import BaseTool, ToolContext, ToolKind, ToolResult, first_line
from ...core.wording import counted
from .models import CallResult, Content, Contents, ServerTool

if TYPE_CHECKING:
    from .manager import McpManager

PREFIX = "mcp__"
MAX_NAME = 64  # what OpenAI and Anthropic accept in a tool name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
SCHEMA_CAP = 64 << 10  # bytes of one tool's input schema as JSON (it goes into every model request)
DESCRIPTION_CAP = 2048  # characters of a tool's description the model is shown (Claude Code's cut too)
TOOLS_CAP = 256  # tools of one server offered at most
SERVER_CAP = 1 << 20  # bytes of one server's schemas and descriptions offered, in all
_CUT = "… [truncated]"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, safe for every model API (at most 64 characters, unique)."""
    name = f"{PREFIX}{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[:MAX_NAME - 9]}_{digest}"


class McpTool:
    """One tool of one MCP server; calls go through the manager (which restarts a dead server)."""

    name: str
    description: str

    def __init__(self, manager: McpManager, server: str, tool: ServerTool) -> None:
        self.name = tool_name(server, tool.name)
        self.server = server
        self.remote_name: str = tool.name
        self.source = tool  # (what the server listed: an unchanged listing keeps this object)
        self.description = cut(tool.description or tool.title or f"The {tool.name} tool of the MCP server {server}.")
        self.schema = object_schema(tool.input_schema)
        self.read_only = tool.read_only
        self._subject = next((key for key, value in self.schema.get("properties", {}).items()
                              if isinstance(value, dict) and value.get("type") == "string"), None)
        self._manager = manager
        self._spec: ToolSpec | None = None

    @property
    def kind(self) -> ToolKind:
        return "read" if self.read_only else "other"

    def spec(self) -> ToolSpec:
        if self._spec is None:  # (one object: the provider tells an unchanged tool list by identity)
            self._spec = ToolSpec(self.name, self.description, self.schema)
        return self._spec

    def subject(self, arguments: dict[str, Any]) -> str:
        value = arguments.get(self._subject or "", "")
        return value if isinstance(value, str) else ""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._manager.call_tool(self.server, self.remote_name, arguments, ctx)


def cut(description: str) -> str:
    """`description`, DESCRIPTION_CAP characters of it at most (saying so when cut)."""
    if len(description) <= DESCRIPTION_CAP:
        return description
    return description[:DESCRIPTION_CAP - len(_CUT)] + _CUT


def screen(tools: Sequence[ServerTool]) -> tuple[list[ServerTool], list[str]]:
    """The tools of one server fit to offer, and lines for those left out: one for each tool
    whose schema is unfit, one for all from where TOOLS_CAP or SERVER_CAP is reached."""
    kept: list[ServerTool] = []
    left_out: list[str] = []
    over: list[str] = []
    spent = 0
    for index, tool in enumerate(tools):
        problem, size = schema_problem(tool.input_schema) if index < TOOLS_CAP else ("", 0)
        size += len(cut(tool.description or tool.title).encode())
        if over or index >= TOOLS_CAP or (not problem and spent + size > SERVER_CAP):
            over.append(tool.name)
        elif problem:
            left_out.append(f"tool {shown(tool.name)} left out: {problem}")
        else:
            kept.append(tool)
            spent += size
    if over:
        left_out.append(f"{counted(len(over), 'tool')} left out, from {shown(over[0])} on: a server is offered {TOOLS_CAP} "
                        f"tools and {SERVER_CAP >> 20} MiB of their schemas and descriptions at most")
    return kept, left_out


def schema_problem(schema: Any) -> tuple[str, int]:
    """What makes `schema` unfit as a tool's input schema ('' when nothing), and its size."""
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object", 0
    try:
        size = len(json.dumps(schema, separators=(",", ":")))  # (ASCII: as many bytes)
    except (TypeError, ValueError, RecursionError):
        return "its input schema cannot be written as JSON", 0
    if size > SCHEMA_CAP:
        return f"its input schema is {_size(size)} of JSON, over the {SCHEMA_CAP >> 10} KB cap", size
    if schema.get("type", "object") != "object":
        return f"its input schema is not an object schema (type {shown(schema['type'])})", size
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(v, (dict, bool)) for v in properties.values()):
        return "its input schema's properties are not an object of schemas", size
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return "its input schema's required is not a list of names", size
    return "", size


def shown(value: Any) -> str:
    """`value` quoted for a message, 60 characters of it at most (a name a server chose)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def claim_names(listed: Mapping[str, Sequence[ServerTool]]) -> tuple[dict[str, tuple[str, ServerTool]],
                                                                     dict[str, list[tuple[str, str]]]]:
    """Our name for each server's tool (server → its tools): `{name: (server, tool)}` for the
    names one tool comes to, and `{name: [(server, tool name), …]}` for those two or more do:
    offered from none of them."""
    claims: dict[str, list[tuple[str, ServerTool]]] = {}
    for server, tools in listed.items():
        for tool in tools:
            claimants = claims.setdefault(tool_name(server, tool.name), [])
            if all((other, mine.name) != (server, tool.name) for other, mine in claimants):
                claimants.append((server, tool))  # (a server listing a tool twice: the first)
    names = {name: found[0] for name, found in claims.items() if len(found) == 1}
    clashes = {name: [(server, tool.name) for server, tool in found] for name, found in claims.items()
               if len(found) > 1}
    return names, clashes


def object_schema(schema: Any) -> dict[str, Any]:
    """The server's input schema, as an object schema every model API takes."""
    value = dict(schema) if isinstance(schema, dict) else {}
    value.setdefault("type", "object")
    if value.get("type") == "object":
        value.setdefault("properties", {})
    return value


def to_result(result: CallResult) -> ToolResult:
    """A tool's result as our ToolResult (see the module docstring)."""
    texts: list[str] = []
    parts: list[str] = []
    for block in result.content:
        text = block_text(block)
        if block.type == "text":
            texts.append(text)
        parts.append(text)
    structured = result.structured
    if structured is not None and not _said(structured, texts):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    content = "\n".join(part for part in parts if part) or ("(error with no message)" if result.is_error
                                                            else "(no content)")
    summary = first_line(content, 60) if result.is_error else ""
    return ToolResult(content, is_error=bool(result.is_error), summary=summary)


def _said(structured: Any, texts: list[str]) -> bool:
    """Whether a text block already carries `structured`: as its JSON, or (a server wrapping a
    plain return value as `{"result": value}`) as the value itself."""
    for text in texts:
        try:
            if json.loads(text) == structured:
                return True
        except ValueError:
            pass
        if isinstance(structured, dict) and list(structured) == ["result"] and str(structured["result"]) == text:
            return True
    return False


def block_text(block: Content) -> str:
    """One content block as text: text as it is, binary content as a placeholder."""
    kind = block.type
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return placeholder(kind, block.mime_type, block.data)
    if kind == "resource" and block.contents is not None:
        return resource_text(block.contents)
    if kind == "resource_link":
        return f"[resource link: {block.uri}{f' ({block.name})' if block.name else ''}]"
    return f"[{kind} content]"


def resource_text(contents: Contents) -> str:
    """A resource's contents: its text, or a placeholder for a blob."""
    if contents.text is not None:
        return contents.text
    return placeholder("resource", contents.mime_type, contents.blob, uri=contents.uri)


def placeholder(kind: str, mime: str, data: str, uri: str = "") -> str:
    """`[image: image/png, 12.3 KB]`: what binary content is, without its bytes."""
    try:
        size = len(base64.b64decode(data, validate=False)) if data else 0
    except (binascii.Error, ValueError):
        size = len(data)
    where = f" {uri}" if uri else ""
    return f"[{kind}{where}: {mime or 'unknown type'}, {_size(size)}; binary content not shown]"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


@dataclass(slots=True, kw_only=True)
class ListResourcesArgs:
    server: Annotated[str | None, Meta(description="Only this MCP server's resources (default: all).")] = None


class ListMcpResourcesTool(BaseTool[ListResourcesArgs]):
    name: ClassVar[str] = "list_mcp_resources"
    description: ClassVar[str] = ("List the resources (files, records, documents) the connected MCP servers "
                                  "offer: server, uri, name, type and description of each.")
    kind: ClassVar[ToolKind] = "read"
    Args = ListResourcesArgs
    subject_field: ClassVar[str | None] = "server"

    def __init__(self, manager: McpManager) -> None:
        self._manager = manager

    async def run(self, args: ListResourcesArgs, ctx: ToolContext) -> ToolResult:
        return await self._manager.list_resources(args.server)


@dataclass(slots=True, kw_only=True)
class ReadResourceArgs:
    server: Annotated[str, Meta(description="The MCP server that has the resource.")]
    uri: Annotated[str, Meta(description="The resource's URI, as list_mcp_resources shows it.")]


class ReadMcpResourceTool(BaseTool[ReadResourceArgs]):
    name: ClassVar[str] = "read_mcp_resource"
    description: ClassVar[str] = "Read one resource of an MCP server by its URI (see list_mcp_resources)."
    kind: ClassVar[ToolKind] = "read"
    Args = ReadResourceArgs
    subject_field: ClassVar[str | None] = "uri"

    def __init__(self, manager: McpManager) -> None:
        self._manager = manager

    async def run(self, args: ReadResourceArgs, ctx: ToolContext) -> ToolResult:
        return await self._manager.read_resource(args.server, args.uri, ctx)
