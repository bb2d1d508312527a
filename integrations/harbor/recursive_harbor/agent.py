"""`RecursiveAgent`: Harbor's installed agent for `recursive`.

Harbor (https://github.com/laude-institute/harbor) loads it by import path
(`-a recursive_harbor:RecursiveAgent`). In the task's environment it installs `recursive`
(from this checkout, or a pip requirement given as `source`), runs `recursive run` — or
`recursive goal` with `mode=goal` — headless on the task's instruction, then exports the
session as an ATIF trajectory into the agent's log folder, from which Harbor's context gets
the tokens and cost.

The container is the sandbox: `recursive` runs with `--permission-mode auto --sandbox off`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Literal, override

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory
from pydantic import Field

PREFIX = PurePosixPath("/installed-agent/recursive")  # the venv `install` makes
SOURCE_DIR = PurePosixPath("/installed-agent/recursive-src")
SESSION_ID = "harbor"
TRAJECTORY = "trajectory.json"
STREAM = "recursive.stream.jsonl"
STDERR = "recursive.stderr.txt"
EXIT_FILE = "recursive.exit"
# Exit codes that end a run the verifier should still judge: 3 a budget, 4 goal not met,
# 5 stuck, 6 a denied action (docs/exit-codes.md). Others (1 error, 2 usage, 75 provider
# unavailable, 130/143 signals) fail the agent step, so Harbor classifies and may retry it.
JUDGED_EXITS = (0, 3, 4, 5, 6)
PROVIDERS = ("openai", "anthropic")
# What the model connection may need, passed from Harbor's environment (or `--ae`) when set.
FORWARDED_ENV = ("RECURSIVE_API_KEY", "RECURSIVE_API_BASE", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
_CHECKOUT = Path(__file__).resolve().parents[3]  # integrations/harbor/recursive_harbor/agent.py


class RecursiveOptions(InstalledAgentOptions):
    """`--ak NAME=VALUE` options of the recursive agent."""

    provider: Literal["openai", "anthropic"] | None = Field(
        default=None, description="The provider; by default the -m prefix (openai/..., anthropic/...).")
    api_base: str | None = Field(default=None, description="The model API's base URL (--api-base).")
    mode: Literal["run", "goal"] = Field(default="run", description="`recursive run` or `recursive goal`.")
    until: str | None = Field(
        default=None, description="goal mode: the condition the judge checks (default: the task is done).")
    check: str | None = Field(default=None, description="goal mode: a shell command that must pass (--check).")
    max_steps: int | None = Field(default=None, description="Model calls per turn (--max-steps).")
    max_turns: int | None = Field(default=None, description="goal mode: turns at most (--max-turns).")
    max_cost: float | None = Field(default=None, description="USD for the whole run (--max-cost).")
    source: str | None = Field(
        default=None,
        description="What to install: a pip requirement (a version, a git URL, a wheel in the "
                    "environment); by default the checkout this adapter belongs to.")
    python: str = Field(default="3.12", description="The Python uv installs when the image has none >= 3.10.")


class RecursiveAgent(BaseInstalledAgent):
    """Runs `recursive` headless in the task's environment; its session is the ATIF trajectory."""

    capabilities = AgentCapabilities(atif=True, reasoning_effort=True)
    options_model = RecursiveOptions

    @staticmethod
    @override
    def name() -> str:
        return "recursive"

    @staticmethod
    @override
    def _parse_model_name_for_connection(model_name: str, *, skip_model_parsing: bool = False
                                         ) -> tuple[str | None, str]:
        """`provider/model` as the trial's record shows it, split as `recursive` reads it: Harbor's
        default asks LiteLLM, whose import costs seconds and which `recursive` does not use."""
        provider, _, rest = model_name.partition("/")
        return (provider, rest) if rest and not skip_model_parsing else (None, model_name)

    @property
    def _options(self) -> RecursiveOptions:
        assert isinstance(self.options, RecursiveOptions)
        return self.options

    @override
    def get_version_command(self) -> str | None:
        return f"{_binary()} --version"

    @override
    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("recursive").strip()

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        source = self._options.source
        if source is None and self._version:  # Harbor's `--ak version=X`: that release
            source = f"recursive-cli=={self._version}"
        if source is None:
            await self._upload_checkout(environment)
            source = str(SOURCE_DIR)
        await self.exec_as_root(environment, install_command(source, self._options.python))

    async def _upload_checkout(self, environment: BaseEnvironment) -> None:
        """Copy the package's sources (not caches, not tests) into the environment."""
        if not (_CHECKOUT / "pyproject.toml").is_file():
            raise ValueError(f"no recursive checkout at {_CHECKOUT}: give --ak source=REQUIREMENT")
        with tempfile.TemporaryDirectory(prefix="recursive-src-") as temp:
            staged = Path(temp) / "src"
            staged.mkdir()
            for name in ("pyproject.toml", "README.md"):
                shutil.copy2(_CHECKOUT / name, staged / name)
            shutil.copytree(_CHECKOUT / "recursive_cli", staged / "recursive_cli",
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            await environment.upload_dir(staged, str(SOURCE_DIR))

    @override
    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        env = {name: value for name in FORWARDED_ENV if (value := self._get_env(name))}
        env["RECURSIVE_TASK"] = instruction  # read from stdin: no quoting, no argv limit
        env["RECURSIVE_HOME"] = str(self.environment_logs_dir / "recursive-home")
        await self.exec_as_agent(environment, self.run_command(), env=env)

    def run_command(self) -> str:
        """The shell command that runs the task, then writes the trajectory, keeping the exit code."""
        logs = self.environment_logs_dir
        binary = _binary()
        args = [*self.recursive_args(), *shlex.split(self.build_cli_flags())]
        judged = " ".join(str(code) for code in JUDGED_EXITS)
        return (
            f"mkdir -p {logs}; set -o pipefail; "
            f"printf '%s' \"$RECURSIVE_TASK\" | {binary} {shlex.join(args)} "
            f"2> {logs / STDERR} | tee {logs / STREAM}; status=$?; "
            f"echo $status > {logs / EXIT_FILE}; "
            f"{binary} sessions export {SESSION_ID} --format atif -o {logs / TRAJECTORY} "
            f"|| echo 'recursive: no trajectory' >&2; "
            f"tail -n 20 {logs / STDERR} >&2; "
            f"case \" {judged} \" in *\" $status \"*) exit 0;; *) exit $status;; esac"
        )

    def recursive_args(self) -> list[str]:
        """`run -` or `goal - --until ...`, with the model, provider and budgets."""
        options = self._options
        provider, model = split_model(self.model_name, options.provider)
        args = [options.mode, "-"]
        if options.mode == "goal":
            args += ["--until", options.until or "the task described in the prompt is complete"]
            if options.check:
                args += ["--check", options.check]
            if options.max_turns is not None:
                args += ["--max-turns", str(options.max_turns)]
        args += ["--provider", provider, "--session-id", SESSION_ID, "-o", "stream-json",
                 "--permission-mode", "auto", "--sandbox", "off", "--no-checkpoints"]
        if model:
            args += ["--model", model]
        if options.api_base:
            args += ["--api-base", options.api_base]
        if options.max_steps is not None:
            args += ["--max-steps", str(options.max_steps)]
        if options.max_cost is not None:
            args += ["--max-cost", str(options.max_cost)]
        if options.reasoning_effort:
            args += ["--effort", options.reasoning_effort]
        return args

    @override
    def convert_trajectory(self, logs_dir: Path) -> Trajectory | None:
        """The trajectory the run exported (it is ATIF already); when the run was cut short
        before it could (Harbor's agent timeout), exported here from the session in the logs."""
        path = logs_dir / TRAJECTORY
        if not path.is_file():
            export_on_host(logs_dir / "recursive-home" / "sessions" / SESSION_ID, path)
        try:
            return Trajectory.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self.logger.warning(f"recursive: no valid trajectory at {path}: {exc}")
            return None

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        """Tokens and cost from the trajectory the run exported; the exit code, finish reason
        and final answer as metadata."""
        trajectory = self.convert_trajectory(self.logs_dir)
        if trajectory is None:
            return
        metrics = trajectory.final_metrics
        if metrics is not None:
            context.n_input_tokens = metrics.total_prompt_tokens or 0
            context.n_cache_tokens = metrics.total_cached_tokens or 0
            context.n_output_tokens = metrics.total_completion_tokens or 0
            context.cost_usd = metrics.total_cost_usd
        extra = trajectory.extra or {}
        context.metadata = {**(context.metadata or {}), **_metadata(extra, self.logs_dir / EXIT_FILE)}


def export_on_host(session: Path, path: Path) -> None:
    """Write the session's ATIF trajectory with this checkout's exporter (its session reading
    and ATIF models need only pydantic, which Harbor has); nothing when either is missing."""
    if not (session / "transcript.jsonl").is_file() or not (_CHECKOUT / "recursive_cli").is_dir():
        return
    if str(_CHECKOUT) not in sys.path:
        sys.path.append(str(_CHECKOUT))
    from recursive_cli import __version__
    from recursive_cli.features.sessions.atif import export_atif
    from recursive_cli.features.sessions.reader import load_session

    path.write_text(export_atif(load_session(session), __version__), encoding="utf-8")


def install_command(source: str, python: str) -> str:
    """Make the venv at PREFIX and install `source` into it: with the image's Python >= 3.10
    when it has one (and venv works), else with a Python that uv installs."""
    venv, quoted = str(PREFIX), shlex.quote(source)
    return (
        "set -eu; "
        f"if [ -x {venv}/bin/recursive ]; then {venv}/bin/recursive --version; exit 0; fi; "
        "PY=''; for candidate in python3.13 python3.12 python3.11 python3.10 python3; do "
        "  if command -v $candidate >/dev/null 2>&1 && $candidate -c "
        "'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; "
        "  then PY=$(command -v $candidate); break; fi; done; "
        f"if [ -n \"$PY\" ]; then \"$PY\" -m venv {venv} && {venv}/bin/pip install -q {quoted}; "
        "else "
        "  if ! command -v uv >/dev/null 2>&1; then "
        "    command -v curl >/dev/null 2>&1 || (apt-get update -q && apt-get install -y -q curl); "
        "    curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/usr/local/bin sh; fi; "
        f"  uv venv -q --python {shlex.quote(python)} {venv} && "
        f"  uv pip install -q --python {venv}/bin/python {quoted}; "
        "fi; "
        f"{venv}/bin/recursive --version"
    )


def split_model(model_name: str | None, provider: str | None) -> tuple[str, str | None]:
    """(provider, model) from Harbor's `-m`: `anthropic/claude-…` and `openai/gpt-…` name the
    provider; with an explicit provider the whole name is the model (`openrouter`-style names)."""
    if provider is not None:
        if model_name and model_name.startswith(provider + "/"):
            model_name = model_name[len(provider) + 1:]
        return provider, model_name or None
    if not model_name:
        return "openai", None
    prefix, _, rest = model_name.partition("/")
    if rest and prefix in PROVIDERS:
        return prefix, rest
    if rest:
        raise ValueError(f"model {model_name!r}: name the provider as openai/MODEL or "
                         "anthropic/MODEL, or pass --ak provider=openai for an OpenAI-compatible server")
    return "openai", model_name


def _binary() -> str:
    """The installed `recursive`, or the image's own (`skip_install`)."""
    return f"$( [ -x {PREFIX}/bin/recursive ] && echo {PREFIX}/bin/recursive || echo recursive )"


def _metadata(extra: dict[str, Any], exit_file: Path) -> dict[str, Any]:
    found: dict[str, Any] = {key: extra[key] for key in ("status", "finish_reason", "final_answer")
                             if key in extra}
    try:
        text = exit_file.read_text().strip()
    except OSError:
        return found
    if re.fullmatch(r"\d+", text):
        found["exit_code"] = int(text)
    return found
