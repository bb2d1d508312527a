"""TASKS.jsonl: one task per line, a JSON object checked against `TaskSpec`.

Every field but `id` and `prompt` may also come from the fleet's flags (`TaskDefaults`); a
task's own value wins. A bad line is one error, `TASKS.jsonl:3: max_turns: expected a whole
number of at least 1 (got 0)`, and the fleet does not start (exit 2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ...core import wording
from ...core.choices import Effort, PermissionMode, ProviderName, SandboxMode
from ...core.errors import TaskFileError  # noqa: F401 (re-exported)

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
          "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}

Positive = Annotated[int, Field(ge=1)]


def parse_size(value: int | float | str) -> int:
    """Bytes in `2G`, `512Mi`, `1.5GB` or a plain number of bytes; ValueError otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ValueError(f"expected a size like 2G, 512Mi or a number of bytes{wording.got(value)}")
        number, unit = float(match.group(1)), (match.group(2) or "").lower().removesuffix("b")
    if number <= 0:
        raise ValueError(f"expected a size of more than 0{wording.got(value)}")
    return int(number * _UNITS[unit])


def is_git_url(workspace: str) -> bool:
    """Whether a task's workspace names a repository to clone rather than a folder."""
    return bool(_URL.match(workspace)) or workspace.endswith(".git")


class TaskDefaults(BaseModel):
    """What a task may set and the fleet's flags give every task: mode, goal, model, budgets,
    permissions, resources. None: not set here (the CLI's own default applies)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["run", "goal"] | None = None
    until: str | None = None
    checks: list[str] | None = None
    max_turns: Positive | None = None
    judge_model: str | None = None
    check_timeout: str | None = None
    model: str | None = None
    provider: ProviderName | None = None
    api_base: str | None = None
    script: str | None = None
    effort: Effort | None = None
    thinking_budget: int | None = Field(default=None, ge=1024)
    max_steps: Positive | None = None
    max_cost: float | None = Field(default=None, gt=0)
    max_duration: str | None = None
    permission_mode: PermissionMode | None = None
    allow: list[str] | None = None
    deny: list[str] | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    add_dir: list[str] | None = None
    no_checkpoints: bool | None = None
    no_stream: bool | None = None
    sandbox: SandboxMode | None = None
    sandbox_network: bool | None = None
    num_cpus: float | None = Field(default=None, gt=0)
    memory: int | None = None

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> int | None:
        return None if value is None else parse_size(value)

    @field_validator("max_duration", "check_timeout")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        from ...core.settings import parse_duration

        if value is not None:
            try:
                if parse_duration(value) <= 0:
                    raise ValueError
            except ValueError:
                raise ValueError("expected " + wording.POSITIVE_DURATION) from None
        return value


class TaskSpec(TaskDefaults):
    """One line of TASKS.jsonl: what to do (`prompt`), where (`workspace`: a folder, or a git
    URL cloned on the worker at `ref`), and how (the `TaskDefaults` fields). `trust`: the
    workspace's own hooks, MCP servers and config count (`--trust-workspace`); a line's own
    say only, never the fleet's flags, and without it a clone's never do. `worktree`: the task
    works in a new git worktree of the workspace's repository, on a branch of its own
    (`-w`, named by the task's session id), so tasks on one repository never touch each
    other's files."""

    id: str
    prompt: str
    workspace: str | None = None
    ref: str | None = None
    trust: bool = False
    worktree: bool = False

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not TASK_ID.match(value):
            raise ValueError("expected letters, digits, '.', '_' and '-' (64 at most, not starting with "
                             f"'.', '_' or '-'){wording.got(value)}")
        return value

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("expected the task's text, not an empty string")
        return value

    @model_validator(mode="after")
    def _git_ref(self) -> TaskSpec:
        if self.ref is not None and not (self.workspace and is_git_url(self.workspace)):
            raise ValueError("ref needs a workspace that is a git URL")
        return self

    @property
    def git(self) -> bool:
        """Whether the workspace is a repository to clone."""
        return bool(self.workspace) and is_git_url(self.workspace or "")


def effective(task: TaskSpec, defaults: TaskDefaults) -> TaskSpec:
    """`task` with every field it leaves unset taken from `defaults`; the mode inferred (goal
    when there are checks or a condition); an error when the result makes no sense."""
    merged = defaults.model_dump(exclude_none=True) | task.model_dump(exclude_unset=True, exclude_none=True)
    spec = TaskSpec.model_validate(merged)
    if spec.mode is None:
        spec.mode = "goal" if (spec.checks or spec.until) else "run"
    if spec.mode == "goal" and not (spec.checks or spec.until):
        raise ValueError("a goal task needs until, checks, or both")
    if spec.mode == "run" and (spec.checks or spec.until):
        raise ValueError("until and checks need mode goal")
    return spec


def read_tasks(path: Path, defaults: TaskDefaults | None = None) -> list[TaskSpec]:
    """The tasks of `path`, each merged with `defaults`, relative paths resolved against the
    file's folder; TaskFileError naming the file and line for the first bad one."""
    defaults = defaults or TaskDefaults()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read tasks file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        task = _parse_line(line, where, defaults)
        if task.id in seen:
            raise TaskFileError(f"{where}: duplicate id {task.id!r} (first on line {seen[task.id]})")
        seen[task.id] = number
        tasks.append(_resolved(task, path.parent.resolve()))
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (one JSON object per line, with id and prompt)")
    return tasks


def _parse_line(line: str, where: str, defaults: TaskDefaults) -> TaskSpec:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise TaskFileError(f"{where}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: expected a JSON object with id and prompt")
    try:
        return effective(TaskSpec.model_validate(data), defaults)
    except ValidationError as exc:
        raise TaskFileError(f"{where}: {describe(exc)}") from None
    except ValueError as exc:
        raise TaskFileError(f"{where}: {exc}") from None


def describe(exc: ValidationError) -> str:
    """The first problem of `exc` in the CLI's words: `max_turns: expected … (got 0)`."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown field {field!r}"
    if kind == "missing":
        return f"missing field {field!r}"
    message = wording.plain(error["msg"])
    if "(got " not in message and kind != "value_error":
        message += wording.got(error.get("input"))
    return f"{field}: {message}" if field else message


def _resolved(task: TaskSpec, base: Path) -> TaskSpec:
    """Relative folder and script paths taken from the tasks file's folder, not the cwd."""
    def absolute(value: str) -> str:
        return str((base / Path(value).expanduser()).resolve())

    if task.workspace and not task.git:
        task.workspace = absolute(task.workspace)
    if task.script:
        task.script = absolute(task.script)
    if task.add_dir:
        task.add_dir = [absolute(value) for value in task.add_dir]
    return task


def cli_flags(task: TaskSpec, max_cost: float | None) -> list[str]:
    """The flags of `recursive goal|run` that give the task its settings (after the mode, before
    the prompt); `max_cost` is the session's cap (the task's own, within the fleet's rest)."""
    flags: list[str] = []
    if task.mode == "goal":
        flags += _valued("--until", task.until) + _repeated("--check", task.checks)
        flags += _valued("--max-turns", task.max_turns) + _valued("--judge-model", task.judge_model)
        flags += _valued("--check-timeout", task.check_timeout)
    flags += _valued("--model", task.model) + _valued("--provider", task.provider)
    flags += _valued("--api-base", task.api_base) + _valued("--script", task.script)
    flags += _valued("--effort", task.effort) + _valued("--thinking-budget", task.thinking_budget)
    flags += _valued("--max-steps", task.max_steps) + _valued("--max-cost", max_cost)
    flags += _valued("--max-duration", task.max_duration) + _valued("--permission-mode", task.permission_mode)
    flags += _repeated("--allow", task.allow) + _repeated("--deny", task.deny)
    flags += _valued("--system-prompt", task.system_prompt)
    flags += _valued("--append-system-prompt", task.append_system_prompt)
    flags += _repeated("--add-dir", task.add_dir)
    flags += ["--no-checkpoints"] if task.no_checkpoints else []
    flags += _valued("--sandbox", task.sandbox) + (["--sandbox-network"] if task.sandbox_network else [])
    flags += ["--worktree="] if task.worktree else []  # (no name: the session id, unique per fleet and task)
    return flags + (["--no-stream"] if task.no_stream else []) + trust_flags(task)


def trust_flags(task: TaskSpec) -> list[str]:
    """`--trust-workspace` when the task's line says `"trust": true`, for a new session and a
    resumed one alike."""
    return ["--trust-workspace"] if task.trust else []


def _valued(flag: str, value: object) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _repeated(flag: str, values: list[str] | None) -> list[str]:
    return [part for value in values or [] for part in (flag, value)]
