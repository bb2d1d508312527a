"""MCP server configuration in Claude Code's `.mcp.json` format, merged from its sources.

    {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"K": "${K:-x}"}},
                    "api": {"type": "http", "url": "https://…/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                    "old": {"type": "sse", "url": "http://127.0.0.1:3001/sse"}}}

Sources, lowest precedence first (a later one's server replaces an earlier one's of the same
name): the user's `$RECURSIVE_HOME/mcp.json`, the workspace's `.mcp.json`, then each
`--mcp-config FILE|JSON` in order. `--strict-mcp-config` keeps only the flags' servers.
`${VAR}` and `${VAR:-default}` are expanded in commands, arguments, env values, URLs and
headers; a variable that is not set and has no default fails that server alone, with the
reason. A file that is not valid JSON, or an entry of the wrong shape, is a `McpConfigError`
naming the file and the key (a usage error: exit 2). Each server has `start_timeout` seconds
to start: the `mcp-timeout` setting, else Claude Code's `MCP_TIMEOUT` (ms), else 30.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ...core.errors import McpConfigError  # noqa: F401 (re-exported)
from ...core.state import StatePart
from ...net.headers import refused_header

DEFAULT_START_TIMEOUT = 30.0
USER_FILE = "mcp.json"  # under $RECURSIVE_HOME
PROJECT_FILE = ".mcp.json"  # in the workspace, as Claude Code reads it
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http", "sse": "sse"}


@dataclass(frozen=True)
class StdioServer:
    """A server run as a subprocess, spoken to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    kind: ClassVar[str] = "stdio"


@dataclass(frozen=True)
class HttpServer:
    """A server at a URL: streamable HTTP (`http`) or the older HTTP+SSE transport (`sse`)."""

    url: str
    transport: Literal["http", "sse"] = "http"
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> str:
        return self.transport


@dataclass(frozen=True)
class SdkServer:
    """A server inside the Agent SDK client's own process (`"type": "sdk"`), reached through
    the client's control channel (`mcp_message` requests) when `recursive` runs under it."""

    name: str
    kind: ClassVar[str] = "sdk"


ServerSpec = StdioServer | HttpServer | SdkServer


@dataclass(frozen=True)
class ServerEntry:
    """One configured server: its spec (None when it cannot start: `problem` says why), where
    it was configured (`origin`, as `mcp list` shows it) and the entry as written there
    (`written`: nothing expanded, so no secret from the environment; for `config show`)."""

    name: str
    spec: ServerSpec | None
    origin: str
    problem: str = ""
    written: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class McpConfig:
    """The servers a run may start, by name, in the order they were configured."""

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    start_timeout: float = DEFAULT_START_TIMEOUT
    request: McpState | None = None  # the flags these came from, kept in the session for resume

    def __bool__(self) -> bool:
        return bool(self.servers)

    def merge(self, other: McpConfig) -> McpConfig:
        """These servers with `other`'s added; a name in both takes `other`'s entry."""
        return McpConfig({**self.servers, **other.servers}, self.start_timeout, other.request or self.request)

    def with_start_timeout(self, seconds: float | None) -> McpConfig:
        """These servers, each given `seconds` to start (the `mcp-timeout` setting); None: as they are."""
        return self if seconds is None else McpConfig(self.servers, seconds, self.request)


@dataclass(slots=True, kw_only=True)
class McpState(StatePart):
    """The `--mcp-config` values (JSON text, or a file's absolute path) and `--strict-mcp-config`
    a session ran with: `resume` uses them again unless it is given MCP flags of its own."""

    key: ClassVar[str] = "mcp"

    configs: list[str] = field(default_factory=list)
    strict: bool = False

    @property
    def given(self) -> bool:
        """Whether any MCP flag was given (so they, not the saved ones, are used)."""
        return bool(self.configs) or self.strict


def load_mcp_config(workspace: Path, home: Path, configs: Sequence[str] = (), strict: bool = False,
                    env: Mapping[str, str] | None = None, timeout: float | None = None, *,
                    user: bool = True, project: bool = False) -> McpConfig:
    """Every source merged (see the module docstring); McpConfigError for a malformed one.
    `timeout`: the `mcp-timeout` setting, when set (else `start_timeout(env)`). The user's
    file counts unless not `user` (`--bare`), the workspace's only with `project`: once the
    workspace is trusted (features/trust/)."""
    env = os.environ if env is None else env
    merged = McpConfig(start_timeout=start_timeout(env, timeout))
    if not strict:
        for label, path, wanted in (("user", home / USER_FILE, user), ("project", workspace / PROJECT_FILE, project)):
            if wanted and path.is_file():
                merged = merged.merge(_file_source(label, path, env))
    given: list[str] = []
    for value in configs:
        text, where, kept = flag_source(value)
        given.append(kept)
        merged = merged.merge(parse_source(text, f"--mcp-config {where}", f"--mcp-config {where}", env))
    merged.request = McpState(configs=given, strict=strict) if given or strict else None
    return merged


def project_servers(workspace: Path, env: Mapping[str, str]) -> McpConfig:
    """The servers of the workspace's own `.mcp.json` alone (none without one), to show
    before it is trusted; McpConfigError for a malformed file."""
    path = workspace / PROJECT_FILE
    return _file_source("project", path, env) if path.is_file() else McpConfig()


def _file_source(label: str, path: Path, env: Mapping[str, str]) -> McpConfig:
    try:
        return parse_source(_read(path, str(path)), f"{label} {path}", str(path), env)
    except McpConfigError as exc:
        raise McpConfigError(str(exc), from_flag=False) from None


def flag_source(value: str) -> tuple[str, str, str]:
    """A `--mcp-config` value's JSON text, how errors name it, and what the session keeps of it
    (JSON text as given; a file as its absolute path, so its secrets stay in the file)."""
    if value.lstrip().startswith("{"):
        return value, "(JSON)", value
    path = Path(value).expanduser()
    if not path.is_file():
        raise McpConfigError(f"--mcp-config: {value!r} is neither JSON text nor a file that exists")
    resolved = str(path.resolve())
    return _read(path, value), value, resolved


def from_mapping(data: Mapping[str, Any], origin: str = "library", env: Mapping[str, str] | None = None) -> McpConfig:
    """Servers given as data: `{"mcpServers": {…}}` or the mapping of names to entries itself."""
    if "mcpServers" not in data and all(isinstance(v, Mapping) for v in data.values()):
        data = {"mcpServers": dict(data)}
    return parse_source(json.dumps(data), origin, origin, os.environ if env is None else env)


def parse_source(text: str, origin: str, where: str, env: Mapping[str, str]) -> McpConfig:
    """The servers of one source's JSON text; McpConfigError naming `where` and the key."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise McpConfigError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise McpConfigError(f'{where}: expected a JSON object with "mcpServers"')
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{where}: mcpServers: expected an object of server names to entries")
    config = McpConfig()
    for name, raw in servers.items():
        key = f"mcpServers.{name}"
        if not name or not isinstance(raw, dict):
            raise McpConfigError(f"{where}: {key}: expected an object with command (or type and url)")
        spec, problem = _entry(raw, where, key, env)
        config.servers[name] = ServerEntry(name, spec, origin, problem, raw)
    return config


def as_written(entry: ServerEntry) -> dict[str, Any]:
    """`entry` as its source wrote it, nothing expanded: `transport`, then `command`, `args`,
    `env` and `cwd`, or `url` and `headers` (the keys it has)."""
    raw = entry.written
    kind = raw.get("type", "stdio" if "command" in raw or "url" not in raw else "http")
    transport = entry.spec.kind if entry.spec is not None else _TYPES.get(kind, str(kind))
    keys = ("command", "args", "env", "cwd") if transport == "stdio" else ("url", "headers")
    return {"transport": transport, **{key: raw[key] for key in keys if key in raw}}


def _entry(raw: dict[str, Any], where: str, key: str, env: Mapping[str, str]) -> tuple[ServerSpec | None, str]:
    """One server entry, checked; variables expanded (a missing one is the entry's `problem`)."""
    kind = raw.get("type", "stdio" if "command" in raw or "url" not in raw else "http")
    if kind == "sdk":  # Claude's Agent SDK: a server inside the client's own process, by its key
        return SdkServer(key.removeprefix("mcpServers.")), ""
    if not isinstance(kind, str) or kind not in _TYPES:
        raise McpConfigError(f"{where}: {key}.type: expected stdio, http or sse (got {kind!r})")
    missing: list[str] = []

    def text(name: str, required: bool = False) -> str | None:
        value = raw.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            raise McpConfigError(f"{where}: {key}.{name}: expected a string" +
                                 (" (it is required)" if required else ""))
        return expand(value, env, missing)

    def table(name: str) -> tuple[tuple[str, str], ...]:
        value = raw.get(name, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise McpConfigError(f"{where}: {key}.{name}: expected an object of string values")
        items = tuple((k, expand(v, env, missing)) for k, v in value.items())
        for header, written in items if name == "headers" else ():  # (net/headers.py says why)
            if (why := refused_header(header, written)) is not None:
                raise McpConfigError(f"{where}: {key}.headers.{header!r}: refused: {why}")
        return items

    spec: ServerSpec
    if _TYPES[kind] == "stdio":
        args = raw.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError(f"{where}: {key}.args: expected a list of strings")
        command = text("command", required=True) or ""
        spec = StdioServer(command, tuple(expand(a, env, missing) for a in args), table("env"), text("cwd"))
    else:
        url = text("url", required=True) or ""
        if not missing and not re.match(r"(?i)https?://[^/\s]+", url):
            raise McpConfigError(f"{where}: {key}.url: expected an http:// or https:// URL (got {url!r})")
        spec = HttpServer(url, "sse" if _TYPES[kind] == "sse" else "http", table("headers"))
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        return None, f"environment variable {names} is not set (write ${{NAME:-default}} for a default)"
    return spec, ""


def has_variable(value: str) -> bool:
    """Whether `value` has a `${VAR}` (or `${VAR:-default}`) in it."""
    return _VARIABLE.search(value) is not None


def expand(value: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`value` with `${VAR}` and `${VAR:-default}` replaced; unset names without a default
    are added to `missing` (and left as written)."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if env.get(name):
            return env[name]
        if default is not None:
            return default
        if name in env:  # set but empty: as the shell has it
            return ""
        missing.append(name)
        return match.group(0)

    return _VARIABLE.sub(one, value)


def start_timeout(env: Mapping[str, str], configured: float | None = None) -> float:
    """Seconds a server has to start (the first that is set): `configured` (the `mcp-timeout`
    setting: flag, `RECURSIVE_MCP_TIMEOUT`, config files), `RECURSIVE_MCP_TIMEOUT` itself (for
    callers without settings), Claude Code's `MCP_TIMEOUT` (milliseconds), 30."""
    return start_timeout_from(env, configured)[0]


def start_timeout_from(env: Mapping[str, str], configured: float | None = None) -> tuple[float, str]:
    """`start_timeout` and where it came from: `setting`, `env RECURSIVE_MCP_TIMEOUT`,
    `env MCP_TIMEOUT (ms)` or `default`."""
    from ...core.settings import parse_duration

    if configured is not None:
        return configured, "setting"
    ours, claude = env.get("RECURSIVE_MCP_TIMEOUT"), env.get("MCP_TIMEOUT")
    try:
        if ours:
            seconds, source = parse_duration(ours), "env RECURSIVE_MCP_TIMEOUT"
        elif claude:
            seconds, source = float(claude) / 1000, "env MCP_TIMEOUT (ms)"
        else:
            return DEFAULT_START_TIMEOUT, "default"
    except ValueError:
        variable = "RECURSIVE_MCP_TIMEOUT" if ours else "MCP_TIMEOUT"
        unit = "a duration like 30s or 2m" if ours else "milliseconds, e.g. 30000"
        raise McpConfigError(f"{variable}: expected {unit} (got {ours or claude!r})", from_flag=False) from None
    if not 0 < seconds < float("inf"):
        raise McpConfigError(f"{source.split()[1]}: the MCP start-up timeout must be more than 0 "
                             f"(got {ours or claude!r})", from_flag=False)
    return seconds, source


def call_timeout(env: Mapping[str, str], default: float) -> float:
    """Seconds one tool call may take: Claude Code's `MCP_TOOL_TIMEOUT` (milliseconds), else
    `default` (the run's tool timeout)."""
    value = env.get("MCP_TOOL_TIMEOUT")
    try:
        return float(value) / 1000 if value and float(value) > 0 else default
    except ValueError:
        raise McpConfigError(f"MCP_TOOL_TIMEOUT: expected milliseconds, e.g. 60000 (got {value!r})",
                             from_flag=False) from None


def _read(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None

