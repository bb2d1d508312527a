"""The tool contract, the context tools run in, and the registry that executes model calls."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, NamedTuple, Protocol, TypeVar

from .errors import ToolError
from .messages import Image, ToolCall, Usage
from .provider import ToolSpec

if TYPE_CHECKING:  # (msgspec comes with a tool's module: the core and checkpoint tools' at their first call)
    from msgspec import ValidationError

ToolKind = Literal["read", "edit", "shell", "other"]
A = TypeVar("A")


class ToolResult(NamedTuple):
    """What a tool returns to the model (`content`) and shows the user (`summary`, one short phrase)."""

    content: str
    is_error: bool = False
    summary: str = ""
    images: tuple[Image, ...] = ()
    """Images for the model after `content` (`read_file` of an image)."""
    answer: str | None = None
    """The turn ends after this call, with this as its answer (`exit_plan_mode`'s plan)."""
    steps: int = 0
    """Model calls the tool made itself (a subagent's): they count toward the turn's `--max-steps`."""
    usage: Usage | None = None
    """What those calls used (already charged to the run's budget): part of the turn's usage."""


class Sandbox(Protocol):
    """Maps paths the model writes to real paths inside the allowed roots."""

    workspace: Path

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Absolute real path for `path`; raises ToolError when it leads outside the roots."""
        ...

    def display(self, path: Path) -> str:
        """`path` as the model should see it (relative to the workspace when inside it)."""
        ...


MARKER_VARIABLE = "RECURSIVE_TOOL_COMMAND"


def _run_marker() -> str:
    """This run's marker, under the one it inherited from a tool command that started it."""
    return child_marker(os.environ.get(MARKER_VARIABLE))


@dataclass(slots=True)
class ProcessTracker:
    """The tool commands of one run, so an interrupt can stop them and all they started.

    `groups` are the process groups of the commands running now. Each command also gets a
    marker in its environment (`new_marker`), which every process it starts inherits, even one
    that leaves the group with `setsid` or `nohup`: `kill_all` finds those through /proc. The
    run's own marker extends the one it inherited (the default), so when `recursive` itself runs
    inside a tool command, the outer run's sweep reaches the inner run's commands too.
    """

    groups: set[int] = field(default_factory=set)
    run_marker: str = field(default_factory=_run_marker)
    _count: int = field(default=0, init=False, repr=False)

    def new_marker(self) -> str:
        """A marker for one more command, under this run's marker."""
        self._count += 1
        return f"{self.run_marker}.{self._count}"

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to every running command's group and every process carrying our marker."""
        for pgid in list(self.groups):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                self.groups.discard(pgid)
            except PermissionError:
                pass
        signal_each(live_processes(self.run_marker), sig)


def child_marker(parent: str | None) -> str:
    """A fresh random marker, under `parent` when there is one."""
    token = secrets.token_hex(6)
    return f"{parent}.{token}" if parent else token


def live_processes(marker: str, pgid: int | None = None, since: int = 0) -> set[int]:
    """Pids of the processes, zombies left out, that carry `marker` (or a marker under it) in
    their environment or belong to group `pgid`, among those started at or after `since`
    (clock ticks since boot, as in /proc/PID/stat). Empty where there is no /proc.

    Zombies are left out because nobody may reap them soon: in a container the init process
    often does not. Only the environments of processes started since `since` are read, and
    only the stat files of processes this process has not seen before (see `_Seen`).
    """
    wanted = f"{MARKER_VARIABLE}={marker}".encode()
    found: set[int] = set()
    seen = _Seen.now()
    for pid, inode in proc_entries():
        start = seen.known_start(pid, inode)
        if start is not None and start < since:
            continue  # started before `since`: neither in the group nor carrying the marker
        fields = _stat_fields(pid)
        if fields is None:
            continue  # gone meanwhile, or not ours to read
        try:
            start = int(fields[19])
            seen.remember(pid, inode, start)
            if fields[0] in (b"Z", b"X") or start < since or int(fields[6]) & PF_KTHREAD:
                continue
            if int(fields[2]) == pgid or carries(pid, wanted):
                found.add(pid)
        except (OSError, IndexError, ValueError):
            continue
    seen.done()
    found.discard(os.getpid())
    return found


class _Seen:
    """What earlier scans read of each process: its start time, keyed by pid and the inode
    number of its /proc/PID folder.

    The kernel numbers a /proc/PID folder afresh (a counter, never reused in practice) each
    time it makes one for a process, and never keeps one past its process's end, so a pid
    whose folder still has the inode an earlier scan saw is the same process, started when
    that scan read: its stat file need not be read again to know that it is older than a
    command. A folder the kernel could not number (inode 0 or 1) is always read.
    """

    last: dict[int, tuple[int, int]] = {}  # pid → (inode, start): the latest scan's

    def __init__(self) -> None:
        self.before = _Seen.last
        self.found: dict[int, tuple[int, int]] = {}

    @classmethod
    def now(cls) -> _Seen:
        return cls()

    def known_start(self, pid: int, inode: int) -> int | None:
        entry = self.before.get(pid)
        if entry is None or inode <= 1 or entry[0] != inode:
            return None
        self.found[pid] = entry
        return entry[1]

    def remember(self, pid: int, inode: int, start: int) -> None:
        if inode > 1:
            self.found[pid] = (inode, start)

    def done(self) -> None:
        _Seen.last = self.found  # (one assignment: a scan in another thread sees either)


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    data = _read_proc(f"/proc/{pid}/stat")
    return data.rsplit(b")", 1)[1].split() if data is not None and b")" in data else None


def _read_proc(path: str) -> bytes | None:
    """A /proc file's bytes, or None when it cannot be read (its process is gone, or not ours)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


EXEC_WAIT_SECONDS = 0.05  # how long an empty environment is read again (a process mid-exec)
PF_KTHREAD = 0x00200000  # /proc/PID/stat's flags: a kernel thread (its environment is always empty)


def read_environ(path: str) -> bytes | None:
    """A process's environment (`path`: its /proc/PID/environ), or None when it cannot be read.

    A process the kernel is still setting up (between fork and the end of exec) shows an empty
    one for a moment, so an empty one is read again for up to EXEC_WAIT_SECONDS (a zombie or a
    kernel thread stays empty: callers that can, leave those out before asking)."""
    deadline = time.monotonic() + EXEC_WAIT_SECONDS
    while (data := _read_proc(path)) == b"" and time.monotonic() < deadline:
        time.sleep(0.002)
    return data


def carries(pid: int, wanted: bytes) -> bool:
    """Whether process `pid` has the environment entry `wanted`, or one extending it with `.`."""
    data = read_environ(f"/proc/{pid}/environ")
    if data is None:
        raise OSError(f"cannot read the environment of process {pid}")
    return any(entry == wanted or entry.startswith(wanted + b".") for entry in data.split(b"\0"))


def proc_pids() -> list[int]:
    """Every pid in /proc; empty where there is no /proc."""
    return [pid for pid, _ in proc_entries()]


def proc_entries() -> list[tuple[int, int]]:
    """(pid, inode number of its /proc folder) for every pid in /proc; empty where there is none."""
    try:
        with os.scandir("/proc") as entries:
            return [(int(entry.name), entry.inode()) for entry in entries if entry.name.isdigit()]
    except OSError:
        return []


def signal_each(pids: Iterable[int], sig: int) -> None:
    """Send `sig` to each of `pids`; one already gone (or not ours) is skipped."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass(slots=True)
class TodoItem:
    """One entry of the model's todo list."""

    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"


class RunningCommand(Protocol):
    """A command started for a tool: `pid` (its session's leader, as we see it) and `exited`,
    a future that gets its exit code (negative for a signal) once it has been reaped."""

    pid: int
    exited: asyncio.Future[int]

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    def close(self) -> None: ...


class CommandSandbox(Protocol):
    """The OS sandbox the agent's commands run in (os_sandbox.py's is the one)."""

    @property
    def confined(self) -> bool: ...

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[bytes, bytes], output_fd: int,
              loop: asyncio.AbstractEventLoop) -> RunningCommand:
        """Start `argv` confined, working in `cwd`, as the leader of a session of its own."""
        ...

    def wrap(self, argv: Sequence[str], cwd: str, report: int = -1) -> list[str]:
        """`argv` as it runs confined, working in `cwd`; what it leaves running named on `report`."""
        ...

    def refusal(self, output: str, exit_code: int | None) -> str:
        """What to tell the model when a failed command's output shows the sandbox refused it."""
        ...

    def describe(self) -> str:
        """One line for the system prompt: what commands may do."""
        ...

    def close(self) -> None: ...


@dataclass(slots=True)
class ToolContext:
    """Everything a tool may use: the sandbox, limits, per-run state and per-workspace storage."""

    sandbox: Sandbox
    home: Path
    shell_timeout: float = 120.0
    output_limit: int = 30_000
    allow_private_network: bool = False
    processes: ProcessTracker = field(default_factory=ProcessTracker)
    todos: list[TodoItem] = field(default_factory=list)
    commands: CommandSandbox | None = None  # the OS sandbox the agent's commands run in (None: off)

    @property
    def workspace(self) -> Path:
        return self.sandbox.workspace


class Tool(Protocol):
    """A capability the model can call by name with JSON arguments."""

    name: ClassVar[str]
    description: ClassVar[str]

    @property
    def kind(self) -> ToolKind:
        """What the tool does, for permission modes: read, edit, shell or other."""
        ...

    def spec(self) -> ToolSpec: ...

    def subject(self, arguments: dict[str, Any]) -> str:
        """The argument rules and the terminal show for a call (a path, a command)."""
        ...

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class BaseTool(Generic[A]):
    """Base for tools whose arguments are one dataclass `Args`; subclasses write `run`.

    `Args` is a `@dataclass(slots=True, kw_only=True)`, each field's description and limits in
    `Annotated[type, msgspec.Meta(description=..., ge=...)]`: msgspec validates a call's
    arguments into it (laxly, as a model writes them: `"3"` for 3; unknown keys are ignored)
    and writes its JSON schema for the spec. Not frozen, though never changed: a frozen class
    costs ~1.5M instructions more to make (its generated guards), at the tool's first call."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind] = "read"
    Args: ClassVar[type[Any]]
    subject_field: ClassVar[str | None] = "path"

    def spec(self) -> ToolSpec:
        """Name, description and the argument schema (`args_schema`).

        Built once per tool class (every turn asks again); the same object each time also lets
        a provider see at once that the tools did not change."""
        key = (type(self), self.name, self.description, self.Args)
        spec = _SPECS.get(key)
        if spec is None:
            spec = _SPECS[key] = ToolSpec(self.name, self.description, args_schema(self.args_class()))
        return spec

    def subject(self, arguments: dict[str, Any]) -> str:
        value = arguments.get(self.subject_field or "", "")
        return value if isinstance(value, str) else ""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import msgspec

        try:
            args = msgspec.convert(arguments, self.args_class(), strict=False)
        except msgspec.ValidationError as exc:
            return ToolResult(f"invalid arguments for {self.name}: {describe_validation(exc)}",
                              is_error=True, summary="invalid arguments")
        return await self.run(args, ctx)

    def args_class(self) -> type[A]:
        """The class `invoke` validates the arguments into: `Args` (a tool whose spec is
        written out may import it only then)."""
        return self.Args

    async def run(self, args: A, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


_SPECS: dict[tuple[type, str, str, type], ToolSpec] = {}


def args_schema(kind: type) -> dict[str, Any]:
    """The JSON schema of an arguments dataclass as models are shown it: `type: object`,
    `properties` with descriptions, limits and defaults, `required`; no `$ref`s (some models
    ignore them) and no titles."""
    import msgspec

    return inline_refs(msgspec.json.schema(kind))


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` replaced by its definition; `$defs`, titles and empty
    `required` lists dropped (JSON Schema draft 4, which some model APIs follow, refuses those)."""
    defs = schema.get("$defs", {})

    def expand(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return expand(defs[ref.split("/")[-1]])
            return {k: expand(v) for k, v in node.items() if k != "$defs"
                    and not (k == "title" and isinstance(v, str)) and not (k == "required" and v == [])}
        if isinstance(node, list):
            return [expand(item) for item in node]
        return node

    return expand(schema)


_WHERE = re.compile(r"^(?P<what>.*) - at `\$\.?(?P<where>[^`]*)`$", re.DOTALL)


def describe_validation(exc: ValidationError) -> str:
    """msgspec's message with the field it is about first, e.g. `limit: Expected `int`, got `str``
    (`todos[0].content: ...`; a missing field: `Object missing required field `path``)."""
    text = str(exc)
    found = _WHERE.match(text)
    if found is None:
        return text
    return f"{found['where'] or 'arguments'}: {found['what']}"


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
        self.version = 0  # counts the changes: a step's tool list is built again only after one
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool
        self.version += 1

    def remove(self, name: str) -> bool:
        """Whether there was a tool of that name (gone now)."""
        self.version += 1
        return self._tools.pop(name, None) is not None

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
        return result._replace(content=cap_text(result.content, ctx.output_limit))


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

