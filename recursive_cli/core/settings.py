"""Settings for one command, merged from flags > env > project config > user config > defaults.

Each value remembers where it came from, for `recursive config show` and for error messages.

`Settings` is a dataclass (no pydantic on a run's path, issue 28). Values of the field's own
type — what typer and TOML give — are taken as they are (a path from text, a number from a
whole number, as pydantic would); any other (the environment's text, a wrong type) goes
through pydantic's validation of the dataclass, imported then, whose first error is told in
the CLI's words. The bounds (`BOUNDS`) and permission rules are checked here either way.
"""

import dataclasses
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

# The choices are spelled once, in `choices` (import-free, for a fast `--help`); settings
# validates against them and re-exports them.
from . import wording
from .choices import (  # noqa: F401 (re-exported)
    EFFORTS,
    OUTPUT_FORMATS,
    PERMISSION_MODES,
    PROVIDERS,
    SANDBOX_MODES,
    Effort,
    OutputFormat,
    PermissionMode,
    ProviderName,
    SandboxMode,
    Wire,
    spelled_out,
)
from .errors import BadValueError, ConfigError  # noqa: F401 (BadValueError re-exported)
from .pricing import ModelPrice
from .values import parse
from .workspace_trust import HeldKey, TrustCheck, TrustVerdict, loosens, toml_value, users_file

DEFAULT_MODELS: dict[ProviderName, str] = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-5",
                                           "scripted": "scripted"}
# Short names for `--model` (and `/model`, `set_model`), per provider: Claude Code's for Anthropic.
# Any other name is sent as it is. docs/providers.md lists them.
MODEL_ALIASES: dict[ProviderName, dict[str, str]] = {
    "anthropic": {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"},
    "openai": {},
    "scripted": {},
}


def resolve_model(provider: ProviderName, name: str) -> str:
    """The model an alias of `provider` stands for (`sonnet` → `claude-sonnet-4-5`); any other name as it is."""
    return MODEL_ALIASES.get(provider, {}).get(name.strip().lower(), name)

ENV_VARS = {
    "model": "RECURSIVE_MODEL",
    "provider": "RECURSIVE_PROVIDER",
    "api_base": "RECURSIVE_API_BASE",
    "workspace": "RECURSIVE_WORKSPACE",
    "max_steps": "RECURSIVE_MAX_STEPS",
    "script": "RECURSIVE_SCRIPT",
    "mcp_timeout": "RECURSIVE_MCP_TIMEOUT",
    "sandbox": "RECURSIVE_SANDBOX",
    "trust_workspace": "RECURSIVE_TRUST_WORKSPACE",
    "wire": "RECURSIVE_WIRE",
    "effort": "RECURSIVE_EFFORT",
    "thinking_budget": "RECURSIVE_THINKING_BUDGET",
    "otel": "RECURSIVE_OTEL",
}


# A permission rule (SPEC §9): `tool` or `tool(glob)`; features/permissions.py applies them.
# The tool may be a glob too, and MCP tools have `-` in their names: `mcp__git__*`, `mcp__my-fs__read`.
PERMISSION_RULE = re.compile(r"^\s*([A-Za-z_*?][A-Za-z0-9_*?-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(slots=True, kw_only=True)
class Settings:
    """Every option of SPEC §3, validated by `validated`. API keys are kept out of `as_json`."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    model: str | None = None
    provider: ProviderName = "openai"
    api_base: str | None = None
    api_key: str | None = dataclasses.field(default=None, repr=False, metadata={"hidden": True})
    workspace: Path = field(default_factory=Path.cwd)
    add_dir: list[Path] = field(default_factory=list)
    max_steps: int = 100
    max_cost: float | None = None
    max_duration: float | None = None
    output_format: OutputFormat = "text"
    session_id: str | None = None
    no_session: bool = False
    no_checkpoints: bool = False
    permission_mode: PermissionMode = "auto"
    allow: list[str] = field(default_factory=list)  # permission rules (PERMISSION_RULE)
    deny: list[str] = field(default_factory=list)
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    no_stream: bool = False
    effort: Effort | None = None  # reasoning effort (issue 30)
    thinking_budget: int | None = None  # Anthropic thinking tokens (issue 30)
    wire: Wire | None = None  # openai wire; None: by the base URL (issue 30)
    quiet: bool = False
    verbose: bool = False
    script: Path | None = None
    shell_timeout: float = 120.0
    mcp_timeout: float | None = None  # None: Claude's MCP_TIMEOUT, else 30 s (features/mcp)
    allow_private_network: bool = False
    sandbox: SandboxMode | None = None  # None: by the permission mode (`sandbox_mode`)
    sandbox_network: bool = False  # commands may reach the network (loopback included)
    sandbox_allow_ports: list[int] = field(default_factory=list)  # loopback ports commands may connect to without the network
    trust_workspace: bool = False  # the workspace's own hooks, servers and config count (features/trust)
    bare: bool = False  # no user or workspace config, hooks, servers, memory or context files
    strict_config: bool = False  # an unknown config key is an error, not ignored
    skill: list[Path] = field(default_factory=list)  # --skill: skill folders, or folders of them, of the user's (features/skills)
    no_skills: bool = False  # offer no skill at all
    otel: bool = False  # export a trace and metrics of the run over OTLP/HTTP (features/telemetry)
    prices: dict[str, ModelPrice] = field(default_factory=dict)  # config only: `[prices."MODEL"]` tables (`_price_table`)

    def __post_init__(self) -> None:
        # Made by hand (an embedding program): a path may be text, as pydantic took it. The
        # values are checked in `validated` (load_settings), not here.
        for key in ("workspace", "script"):
            value = getattr(self, key)
            if isinstance(value, str):
                setattr(self, key, Path(value))
        if any(isinstance(path, str) for path in self.add_dir):
            self.add_dir = [Path(path) for path in self.add_dir]

    @property
    def sandbox_mode(self) -> SandboxMode:
        """The sandbox in force: the chosen one, else `read-only` in read-only mode and
        `workspace-write` in every other."""
        if self.sandbox is not None:
            return self.sandbox
        return "read-only" if self.permission_mode == "read-only" else "workspace-write"

    @property
    def effective_model(self) -> str:
        """The model to ask: `model` (an alias resolved), else the provider's default."""
        return resolve_model(self.provider, self.model) if self.model else DEFAULT_MODELS[self.provider]


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(Settings)}
CONFIG_KEYS = frozenset(FIELDS) - {"api_key", "bare"}  # (--bare reads no config file)
# The bounds of numbers: (at least, more than).
BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "max_steps": (1, None), "max_cost": (None, 0), "max_duration": (None, 0),
    "thinking_budget": (1024, None), "shell_timeout": (None, 0), "mcp_timeout": (None, 0)}


def default_of(key: str) -> Any:
    """The default value of the setting `key`."""
    spec = FIELDS[key]
    return spec.default_factory() if spec.default is dataclasses.MISSING else spec.default  # type: ignore[misc,operator]


def _process_env() -> Mapping[str, str]:
    return os.environ


@dataclass(slots=True)
class LoadedSettings:
    """The merged settings and, per key, where its value came from; the home folder, and the
    environment they were loaded from (`os.environ` by default); whether the workspace's own
    configuration counts (`trust`), the keys of its config left out until it does (`held`),
    and the unknown keys of the config files, ignored (`warnings`)."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)
    home: Path = Path()
    env: Mapping[str, str] = field(default_factory=_process_env, repr=False)
    trust: TrustVerdict | None = None  # None: not decided (settings made by hand)
    held: list[HeldKey] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def api_key_for(self, provider: str) -> str | None:
        """The API key for `provider` from the environment these settings were loaded from."""
        return api_key_for(provider, self.env)


def recursive_home(env: Mapping[str, str]) -> Path:
    """`$RECURSIVE_HOME`, else `~/.recursive`."""
    value = env.get("RECURSIVE_HOME")
    return Path(value).expanduser() if value else Path.home() / ".recursive"


def default_home() -> Path:
    """The home folder for this process's environment (`recursive_home(os.environ)`)."""
    return recursive_home(os.environ)


def parse_duration(text: str) -> float:
    """Seconds in `90`, `90s`, `20m`, `2h`, `1h30m` or `1d`; raises ValueError otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r}; use e.g. 90s, 20m, 2h")
    return sum(float(n) * units[u] for n, u in parts)


def read_config_file(path: Path, unknown: list[str] | None = None) -> dict[str, Any]:
    """A config file's keys (long option names, `-` or `_`), or {} when it does not exist; an
    unknown key is a ConfigError, or with `unknown` given, noted there and left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # (a workspace that is a file has no config: its own error says so)
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if sys.version_info >= (3, 11):  # (imported here: most runs have no config file to parse)
        import tomllib
    else:  # Python 3.10: the same parser, published as `tomli` (a dependency there only)
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in CONFIG_KEYS:
            problem = f"{path}:{_line_of(text, key)}: unknown key {key!r}"
            if unknown is None:
                raise ConfigError(problem)
            unknown.append(problem)
            continue
        values[name] = value
    return values


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(key):
            return number
    return 1


def _env_values(env: Mapping[str, str]) -> dict[str, Any]:
    return {name: env[var] for name, var in ENV_VARS.items() if env.get(var)}


def _file_layer(label: str, path: Path, unknown: list[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A config file's values and, per key, `label path:line` for error messages and `config show`."""
    values = read_config_file(path, unknown)
    if not values:
        return values, {}
    text = path.read_text(encoding="utf-8")
    where = {}
    for key in values:
        line = _line_of(text, key) if key in text else _line_of(text, key.replace("_", "-"))
        where[key] = f"{label} {path}:{line}"
    if "prices" in values:  # a table per model, each with its own source
        values["prices"] = _price_table(values["prices"], label, path, text, where)
    return values, where


def load_settings(flags: Mapping[str, Any], env: Mapping[str, str] | None = None,
                  trust: TrustCheck | None = None, claude: bool = False) -> LoadedSettings:
    """Merge every source; raises ConfigError naming the bad file, variable or flag. The
    workspace's config keys that loosen anything count once it is trusted: by the user for
    this run (`trust-workspace` in flags, env or user config), else as `trust` says (the
    record of `recursive trust`; None: untrusted). `--bare` reads no config file."""
    env = os.environ if env is None else env
    home = recursive_home(env)
    given_flags = {k: v for k, v in flags.items() if v is not None and v != [] and v is not False}
    bare = bool(given_flags.get("bare"))
    unknown: list[str] = []
    user = ({}, {}) if bare else _file_layer("user config", home / "config.toml", unknown)
    env_values = _env_values(env)
    workspace = Path(given_flags.get("workspace") or env_values.get("workspace")
                     or user[0].get("workspace") or Path.cwd()).expanduser()
    project_file = workspace / ".recursive" / "config.toml"
    ours = bare or users_file(project_file, home)  # (a workspace at `~`: its project config is the user's)
    project = ({}, {}) if ours else _file_layer("project config", project_file, unknown)
    env_layer = (env_values, {k: f"env {ENV_VARS[k]}" for k in env_values})
    flag_layer = (given_flags, {k: "flag" for k in given_flags})
    verdict = _trust_verdict(workspace, home, trust, bare, [flag_layer, env_layer, user])
    users = {**user[0], **env_values, **given_flags}  # what the user set, whichever way
    held = [] if verdict.trusted else _hold(project, users, overridden=set(env_values) | set(given_flags))
    project[0].pop("trust_workspace", None)  # (never the workspace's own say, trusted or not)
    warnings = _unknown_keys(unknown, [flag_layer, user, project])
    layers = [user, project, env_layer, flag_layer]
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for values, where in layers:
        merged.update(values)
        sources.update(where)
    merged["prices"] = {**user[0].get("prices", {}), **project[0].get("prices", {})}  # per model
    for key in ("max_duration", "mcp_timeout"):
        if isinstance(merged.get(key), (str, bool)):  # (a bool is no duration, though pydantic takes it for 1.0)
            merged[key] = _duration(merged[key], key, sources[key])
    merged["api_base"] = merged.get("api_base") or _fallback_base(merged, env, sources)
    if merged["api_base"]:
        _check_base_url(str(merged["api_base"]), sources.get("api_base", "default"))
    provider = str(merged.get("provider") or "openai")
    merged["api_key"] = api_key_for(provider, env, claude)
    if merged["api_key"]:
        sources["api_key"] = f"env {key_source(provider, env, claude)}"
    return LoadedSettings(validated(merged, sources), sources, home, env, verdict, held, warnings)


def validated(values: dict[str, Any], sources: Mapping[str, str]) -> Settings:
    """`values` as Settings; BadValueError (a flag's) or ConfigError naming the first bad one."""
    taken = _as_given(values)
    if taken is None:
        from pydantic import ValidationError

        try:
            settings = parse(Settings, values)
        except ValidationError as exc:
            error = BadValueError if _source_of(exc, sources) == "flag" else ConfigError  # flag: exit 2
            raise error(_describe(exc, sources)) from None
    else:
        settings = Settings(**taken)
    for key in ("allow", "deny"):
        for rule in getattr(settings, key):
            if not PERMISSION_RULE.match(rule):
                raise _bad_value(key, sources, "expected " + wording.RULE, rule)
    for key, (low, above) in BOUNDS.items():
        value = getattr(settings, key)
        if value is not None and ((low is not None and value < low) or (above is not None and value <= above)):
            raise _bad_value(key, sources, accepted(key, {"type": "bound", "loc": (key,), "msg": ""}), values[key])
    return settings


def _bad_value(key: str, sources: Mapping[str, str], accepts: str, value: Any) -> BadValueError | ConfigError:
    where = sources.get(key, "default")
    error = BadValueError if where == "flag" else ConfigError
    return error(f"invalid value for {key.replace('_', '-')} ({where}): {accepts}{wording.got(value)}")


def _as_given(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """`values` if each is of its field's type already (a path may be text, a float a whole
    number: the conversions pydantic makes); None when any needs pydantic's validation."""
    taken: dict[str, Any] = {}
    for key, value in values.items():
        spec = FIELDS.get(key)
        if spec is None:
            return None
        ok, taken[key] = _of_type(value, spec.type)
        if not ok:
            return None
    return taken


def _of_type(value: Any, kind: Any) -> tuple[bool, Any]:
    """Whether `value` is a `kind` as it is (or after the lossless conversions), and the value."""
    origin = get_origin(kind)
    if origin is Union or type(kind).__name__ == "UnionType":
        for option in get_args(kind):
            ok, taken = _of_type(value, option)
            if ok:
                return True, taken
        return False, value
    if origin is Literal:
        return isinstance(value, str) and value in get_args(kind), value
    if origin is list:
        if type(value) is not list:
            return False, value
        items = [_of_type(item, get_args(kind)[0]) for item in value]
        return all(ok for ok, _ in items), [item for _, item in items]
    if origin is dict:
        ok = type(value) is dict and all(type(k) is str and isinstance(v, get_args(kind)[1]) for k, v in value.items())
        return ok, value
    if kind is type(None):
        return value is None, value
    if kind is Path:
        return isinstance(value, (str, Path)), Path(value) if isinstance(value, str) else value
    if kind is float and type(value) is int:
        return True, float(value)
    return type(value) is kind, value


def loosening_keys(workspace: Path, home: Path) -> list[HeldKey]:
    """The keys of `workspace`'s own config that loosen the user's, whether it is trusted or
    not (what `recursive trust` shows); ConfigError for a config file that cannot be read."""
    user = _file_layer("user config", home / "config.toml", [])
    return _hold(_file_layer("project config", workspace / ".recursive" / "config.toml", []), user[0], set())


def _trust_verdict(workspace: Path, home: Path, trust: TrustCheck | None, bare: bool,
                   layers: list[tuple[dict[str, Any], dict[str, str]]]) -> TrustVerdict:
    """Whether the workspace's own configuration counts: never with `--bare`; for this run
    when the user says so (flag, env or user config, in that order); else as `trust` says."""
    workspace = workspace.resolve()
    if bare:
        return TrustVerdict(workspace, False, "--bare", quiet=True)
    for values, where in layers:
        if str(values.get("trust_workspace", "")).lower() in ("1", "true", "yes", "on"):
            source = where.get("trust_workspace", "flag")
            return TrustVerdict(workspace, True, "--trust-workspace" if source == "flag" else source)
    return trust(workspace, home) if trust is not None else TrustVerdict(workspace, False, "not trusted")


def _hold(project: tuple[dict[str, Any], dict[str, str]], user: Mapping[str, Any],
          overridden: set[str]) -> list[HeldKey]:
    """Take the keys out of the workspace's config that loosen the user's (`user`: their
    config, env and flags, over the defaults); those that would have counted (no env variable
    or flag sets them) are returned."""
    values, where = project
    base = {**{key: default_of(key) for key in FIELDS}, **user}
    held: list[HeldKey] = []
    label = "project config "
    for model, price in values.pop("prices", {}).items():
        source = where.pop(f"prices.{model}", "").removeprefix(label)
        held.append(HeldKey(f'prices."{model}"', price.describe(), source))
    for key in [key for key, value in values.items() if loosens(key, value, base)]:
        value, source = values.pop(key), where.pop(key, "").removeprefix(label)
        if key not in overridden:
            held.append(HeldKey(key.replace("_", "-"), toml_value(value), source))
    return sorted(held, key=lambda item: int(item.where.rpartition(":")[2] or 0))  # (in the file's order)


def _unknown_keys(unknown: list[str], layers: list[tuple[dict[str, Any], dict[str, str]]]) -> list[str]:
    """Warnings for the config files' unknown keys; ConfigError for the first with
    `strict-config` (a flag, or either config file)."""
    if unknown and any(values.get("strict_config") is True for values, _ in layers):
        raise ConfigError(unknown[0])
    return [f"{problem} (ignored; --strict-config makes it an error)" for problem in unknown]


PRICE_FIELDS = {"input": "input", "output": "output", "cache_read": "cached_input",
                "cache_write": "cache_write"}


def _price_table(table: Any, label: str, path: Path, text: str, where: dict[str, str]) -> dict[str, ModelPrice]:
    """A config file's `[prices."MODEL"]` tables (USD per million tokens) as prices, validated;
    `where` gets `prices.MODEL` → `label path:line` in place of one source for the whole table."""
    where.pop("prices", None)
    if not isinstance(table, dict):
        raise ConfigError(f'{path}:{_line_of(text, "prices")}: prices must be tables: '
                          '[prices."MODEL"] with input = and output = (USD per million tokens)')
    prices: dict[str, ModelPrice] = {}
    for model, entry in table.items():
        line = _price_line(text, model)
        where[f"prices.{model}"] = f"{label} {path}:{line}"
        prefix = f'{path}:{line}: [prices."{model}"]'
        if not isinstance(entry, dict):
            raise ConfigError(f"{prefix} must be a table with input and output (USD per million tokens)")
        values: dict[str, float] = {}
        for key, value in entry.items():
            name = key.replace("-", "_")
            if name not in PRICE_FIELDS:
                raise ConfigError(f"{prefix}: unknown key {key!r} (use {', '.join(PRICE_FIELDS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ConfigError(f"{prefix}: {key} must be a number of USD per million tokens, 0 or more")
            values[PRICE_FIELDS[name]] = float(value)
        missing = [key for key in ("input", "output") if key not in values]
        if missing:
            raise ConfigError(f"{prefix}: missing {' and '.join(missing)} (USD per million tokens)")
        prices[model] = ModelPrice(**values)
    return prices


def _price_line(text: str, model: str) -> int:
    """The line that starts `model`'s price table (`[prices."MODEL"]`, or its key under `[prices]`)."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if model in line and line.strip().startswith(("[prices", "prices")):
            return number
    return next((number for number, line in enumerate(lines, 1) if model in line), 1)


def _duration(value: str | bool, key: str, source: str) -> float:
    try:
        seconds = parse_duration(value) if isinstance(value, str) else None
    except ValueError:
        seconds = None
    if seconds is None or seconds <= 0:
        accepts = wording.DURATION if seconds is None else wording.POSITIVE_DURATION
        raise ConfigError(f"invalid value for {key.replace('_', '-')} ({source}): expected {accepts}{wording.got(value)}")
    return seconds


def _fallback_base(merged: dict[str, Any], env: Mapping[str, str], sources: dict[str, str]) -> str | None:
    var = "ANTHROPIC_BASE_URL" if merged.get("provider") == "anthropic" else "OPENAI_BASE_URL"
    if env.get(var):
        sources["api_base"] = f"env {var}"
    return env.get(var) or None


def _check_base_url(value: str, source: str) -> None:
    problem = base_url_problem(value)
    if problem:  # a flag's is exit 2, a config file's or a variable's exit 1, as every other value's
        error = BadValueError if source == "flag" else ConfigError
        raise error(f"invalid value for api-base ({source}): {value!r} {problem}")


def base_url_problem(value: str) -> str | None:
    """What is wrong with a base URL and how to fix it, e.g. `has no scheme; add http:// (…)`; None if fine."""
    if any(char.isspace() for char in value):
        return "contains whitespace; remove it"
    if re.match(r"(?i)https?:/?(?!/)", value):
        return "needs two slashes after the scheme, as in http://127.0.0.1:11434/v1"
    if "://" not in value:
        return f"has no scheme; add http:// (http://{value})"
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        return f"has the scheme {parts.scheme}://; use http:// or https://"
    if not parts.hostname:
        return "names no host; e.g. http://127.0.0.1:11434/v1"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        return "has a bad port; use a number from 1 to 65535 after the host, e.g. http://127.0.0.1:8000/v1"
    return None


CLAUDE_TOKEN = "ANTHROPIC_AUTH_TOKEN"  # Claude Code's other key variable (sent as a bearer token)


def key_variables(provider: str) -> tuple[str, str]:
    """The variables an API key is read from, in order: `RECURSIVE_API_KEY`, then the provider's own."""
    return ("RECURSIVE_API_KEY", "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY")


def api_key_for(provider: str, env: Mapping[str, str] | None = None, claude: bool = False) -> str | None:
    """`RECURSIVE_API_KEY`, else the provider's own variable (for anthropic in Claude-compatible
    mode, `claude`, then Claude Code's `ANTHROPIC_AUTH_TOKEN`). The only place keys are read."""
    env = os.environ if env is None else env
    var = key_source(provider, env, claude)
    return env[var] if var else None


def key_source(provider: str, env: Mapping[str, str], claude: bool = False) -> str | None:
    """The variable `provider`'s key comes from, or None. Claude Code's token counts only in
    Claude-compatible mode (`-p`, where Claude's variables are the contract): elsewhere a
    credential an SDK would pick up on its own must not travel (to a keyless local server)."""
    names = (*key_variables(provider), *((CLAUDE_TOKEN,) if claude and provider == "anthropic" else ()))
    return next((var for var in names if env.get(var)), None)


def missing_key_message(provider: str) -> str:
    """What to tell a user who has no API key for `provider`."""
    ours, fallback = key_variables(provider)
    return f"no API key for the {provider} provider: set {ours} (or {fallback})"


def _source_of(exc: Any, sources: Mapping[str, str]) -> str:
    """Where the first bad value was set: `flag`, `env VAR`, a config file, or `default`."""
    loc = exc.errors()[0]["loc"]
    return sources.get(str(loc[0]) if loc else "?", "default")


def _describe(exc: Any, sources: Mapping[str, str]) -> str:
    """`invalid value for max-steps (env RECURSIVE_MAX_STEPS): expected a whole number of at
    least 1 (got 'abc')`: the key, where it was set and what it accepts, in the CLI's words."""
    error = exc.errors()[0]
    key = str(error["loc"][0]) if error["loc"] else "?"
    where = sources.get(key, "default")
    return f"invalid value for {key.replace('_', '-')} ({where}): {accepted(key, error)}{wording.got(error['input'])}"


# What a key accepts where its type does not say it well enough.
_ACCEPTS = {"max_cost": wording.USD, "max_duration": wording.POSITIVE_DURATION,
            "mcp_timeout": wording.POSITIVE_DURATION}


def accepted(key: str, error: Mapping[str, Any]) -> str:
    """What the setting `key` accepts, in words: `expected a whole number of at least 1`."""
    if key in _ACCEPTS:
        return "expected " + _ACCEPTS[key]
    if error["type"] == "value_error":  # our own validators say it in our words already
        return wording.plain(error["msg"])
    spec = FIELDS.get(key)
    if spec is None:
        return wording.plain(error["msg"])
    kind = _without_none(spec.type)
    if get_origin(kind) is list:
        item = _without_none(get_args(kind)[0])
        if len(error["loc"]) > 1:  # one item of the list is wrong
            return f"expected {wording.RULE}" if key in ("allow", "deny") else _described(item, (None, None))
        example = '["run_shell(git *)"]' if key in ("allow", "deny") else '["../lib"]'
        return f"expected a list, e.g. {key.replace('_', '-')} = {example}"
    return _described(kind, BOUNDS.get(key, (None, None)))


def _described(kind: Any, bounds: tuple[float | None, float | None]) -> str:
    """What a value of type `kind`, within `bounds` (at least, more than), is in words."""
    low, above = bounds
    if get_origin(kind) is Literal:
        return "expected " + spelled_out(tuple(map(str, get_args(kind))))
    if kind is bool:
        return "expected " + wording.BOOLEAN
    if kind in (int, float):
        return "expected " + wording.number(kind is int, low, above=above)
    if kind is Path:
        return "expected a path (text)"
    return "expected text"


def _without_none(annotation: Any) -> Any:
    """`X` of `X | None`."""
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if type(None) in get_args(annotation) and len(args) == 1:
        return args[0]
    return annotation
