"""The tool contract, the context tools run in, and the registry that executes model calls."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from ..messages import ToolCall
from ..providers.base import ToolSpec

ToolKind = Literal["read", "edit", "shell", "other"]
A = TypeVar("A", bound=BaseModel)


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model as an error result."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns to the model (`content`) and shows the user (`summary`, one short phrase)."""

    content: str
    is_error: bool = False
    summary: str = ""


class Sandbox(Protocol):
    """Maps paths the model writes to real paths inside the allowed roots."""

    workspace: Path

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Absolute real path for `path`; raises ToolError when it leads outside the roots."""
        ...

    def display(self, path: Path) -> str:
        """`path` as the model should see it (relative to the workspace when inside it)."""
        ...


@dataclass
class ProcessTracker:
    """Process groups of running tool commands, so an interrupt can stop them first."""

    groups: set[int] = field(default_factory=set)

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        for pgid in list(self.groups):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                self.groups.discard(pgid)


@dataclass
class TodoItem:
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"


@dataclass
class ToolContext:
    """Everything a tool may use: the sandbox, limits, per-run state and per-workspace storage."""

    sandbox: Sandbox
    home: Path
    shell_timeout: float = 120.0
    output_limit: int = 30_000
    allow_private_network: bool = False
    processes: ProcessTracker = field(default_factory=ProcessTracker)
    todos: list[TodoItem] = field(default_factory=list)

    @property
    def workspace(self) -> Path:
        return self.sandbox.workspace


class Tool(Protocol):
    """A capability the model can call by name with JSON arguments."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]

    def spec(self) -> ToolSpec: ...

    def subject(self, arguments: dict[str, Any]) -> str:
        """The argument rules and the terminal show for a call (a path, a command)."""
        ...

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class BaseTool(Generic[A]):
    """Base for tools whose arguments are one pydantic model `Args`; subclasses write `run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind] = "read"
    Args: ClassVar[type[BaseModel]]
    subject_field: ClassVar[str | None] = "path"

    def spec(self) -> ToolSpec:
        """Name, description and the argument schema with `$ref`s inlined (some models ignore them)."""
        return ToolSpec(self.name, self.description, inline_refs(self.Args.model_json_schema()))

    def subject(self, arguments: dict[str, Any]) -> str:
        value = arguments.get(self.subject_field or "", "")
        return value if isinstance(value, str) else ""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            args = self.Args.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(f"invalid arguments for {self.name}: {describe_validation(exc)}",
                              is_error=True, summary="invalid arguments")
        return await self.run(args, ctx)  # type: ignore[arg-type]

    async def run(self, args: A, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` replaced by its definition and `$defs` dropped."""
    defs = schema.get("$defs", {})

    def expand(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return expand(defs[ref.split("/")[-1]])
            return {k: expand(v) for k, v in node.items()
                    if k != "$defs" and not (k == "title" and isinstance(v, str))}
        if isinstance(node, list):
            return [expand(item) for item in node]
        return node

    return expand(schema)


def describe_validation(exc: ValidationError) -> str:
    """One line naming each bad field, e.g. `path: Field required; limit: Input should be a valid integer`."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def cap_text(text: str, limit: int) -> str:
    """Keep the head and tail of `text` within about `limit` characters, saying what was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n… [{cut} characters omitted] …\n{text[-tail:]}"


class ToolRegistry:
    """The tools of one run, by name; executes calls and turns every failure into an error result."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [tool.spec() for tool in self._tools.values()]

    def __len__(self) -> int:
        return len(self._tools)

    async def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run `call`; unknown tools, bad JSON, tool errors and crashes all become error results."""
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult(f"unknown tool {call.name!r}; available tools: {known}",
                              is_error=True, summary="unknown tool")
        arguments = parse_arguments(call)
        if isinstance(arguments, ToolResult):
            return arguments
        try:
            result = await tool.invoke(arguments, ctx)
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True, summary=first_line(str(exc)))
        except Exception as exc:  # a tool bug must not end the run
            return ToolResult(f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True,
                              summary=first_line(f"{type(exc).__name__}: {exc}"))
        return ToolResult(cap_text(result.content, ctx.output_limit), result.is_error,
                          result.summary)


def parse_arguments(call: ToolCall) -> dict[str, Any] | ToolResult:
    """The call's arguments as a JSON object, or an error result explaining what is wrong."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError as exc:
        return ToolResult(f"arguments for {call.name} are not valid JSON ({exc}); "
                          "send a JSON object", is_error=True, summary="invalid JSON")
    if not isinstance(value, dict):
        return ToolResult(f"arguments for {call.name} must be a JSON object",
                          is_error=True, summary="invalid arguments")
    return value


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"

