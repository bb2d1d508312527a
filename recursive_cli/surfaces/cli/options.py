"""The common options of SPEC §3, declared once and added to every agent command."""

import enum
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Optional, cast

import typer

from ...core.choices import OUTPUT_FORMATS, PERMISSION_MODES, PROVIDERS, spelled_out

ADVANCED = "Advanced"
MODEL = "Model and provider"
BUDGETS = "Budgets"
OUTPUT = "Output"
SAFETY = "Permissions"


def _choice_enum(name: str, values: tuple[str, ...]) -> type[enum.Enum]:
    """A str enum of `values` for typer (members named like `stream_json`)."""
    members = {value.replace("-", "_"): value for value in values}
    return cast("type[enum.Enum]", enum.Enum(name, members, type=str))


# typer takes its choices from enums; these are built from the one spelling in `choices`.
ProviderName = _choice_enum("ProviderName", PROVIDERS)
OutputFormat = _choice_enum("OutputFormat", OUTPUT_FORMATS)
PermissionMode = _choice_enum("PermissionMode", PERMISSION_MODES)
_PROVIDERS_HELP = spelled_out(tuple(p + " (any compatible server)" if p == "openai" else p for p in PROVIDERS))


@dataclass
class CommonOptions:
    """The parsed common options; None / False / [] mean "not given on the command line"."""

    model: Optional[str] = None
    provider: Optional[enum.Enum] = None  # a ProviderName
    api_base: Optional[str] = None
    workspace: Optional[Path] = None
    add_dir: Optional[list[Path]] = None
    max_steps: Optional[int] = None
    max_cost: Optional[float] = None
    max_duration: Optional[str] = None
    output_format: Optional[enum.Enum] = None  # an OutputFormat
    session_id: Optional[str] = None
    no_session: bool = False
    no_checkpoints: bool = False
    permission_mode: Optional[enum.Enum] = None  # a PermissionMode
    allow: Optional[list[str]] = None
    deny: Optional[list[str]] = None
    system_prompt: Optional[str] = None
    append_system_prompt: Optional[str] = None
    no_stream: bool = False
    quiet: bool = False
    verbose: bool = False
    script: Optional[Path] = None

    def as_flags(self) -> dict[str, Any]:
        """Values for `load_settings`, enums turned into their strings."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in values.items()}


_OPTIONS: dict[str, Any] = {
    "model": Annotated[Optional[str], typer.Option("--model", "-m", help="Model name (default: the provider's).", rich_help_panel=MODEL)],
    "provider": Annotated[Optional[ProviderName], typer.Option("--provider", help=_PROVIDERS_HELP + ".", rich_help_panel=MODEL, show_default=False)],
    "api_base": Annotated[Optional[str], typer.Option("--api-base", help="Base URL of the API.", rich_help_panel=MODEL)],
    "workspace": Annotated[Optional[Path], typer.Option("--workspace", "-C", help="Root the tools work in (default: current directory).")],
    "add_dir": Annotated[Optional[list[Path]], typer.Option("--add-dir", help="Another root the file tools may use (repeatable).", rich_help_panel=ADVANCED)],
    "max_steps": Annotated[Optional[int], typer.Option("--max-steps", min=1, help="LLM calls per turn (default 100).", rich_help_panel=BUDGETS)],
    "max_cost": Annotated[Optional[float], typer.Option("--max-cost", help="USD for the whole session.", rich_help_panel=BUDGETS)],
    "max_duration": Annotated[Optional[str], typer.Option("--max-duration", help="Wall clock, e.g. 90s, 20m, 2h.", rich_help_panel=BUDGETS)],
    "output_format": Annotated[Optional[OutputFormat], typer.Option("--output-format", "-o", help=spelled_out(OUTPUT_FORMATS) + ".", rich_help_panel=OUTPUT, show_default=False)],
    "session_id": Annotated[Optional[str], typer.Option("--session-id", help="Id for the new session.", rich_help_panel=ADVANCED)],
    "no_session": Annotated[bool, typer.Option("--no-session", help="Keep nothing on disk.", rich_help_panel=ADVANCED)],
    "no_checkpoints": Annotated[bool, typer.Option("--no-checkpoints", help="No workspace snapshots.", rich_help_panel=ADVANCED)],
    "permission_mode": Annotated[Optional[PermissionMode], typer.Option("--permission-mode", help=spelled_out(PERMISSION_MODES) + ".", rich_help_panel=SAFETY, show_default=False)],
    "allow": Annotated[Optional[list[str]], typer.Option("--allow", help="Allow rule like 'run_shell(git *)' (repeatable).", rich_help_panel=SAFETY)],
    "deny": Annotated[Optional[list[str]], typer.Option("--deny", help="Deny rule like 'write_file(secrets/**)'; deny wins.", rich_help_panel=SAFETY)],
    "system_prompt": Annotated[Optional[str], typer.Option("--system-prompt", help="Replace the built-in system prompt.", rich_help_panel=ADVANCED)],
    "append_system_prompt": Annotated[Optional[str], typer.Option("--append-system-prompt", help="Extend the system prompt.", rich_help_panel=ADVANCED)],
    "no_stream": Annotated[bool, typer.Option("--no-stream", help="Ask the provider for whole responses.", rich_help_panel=ADVANCED)],
    "quiet": Annotated[bool, typer.Option("--quiet", "-q", help="Less on stderr.", rich_help_panel=OUTPUT)],
    "verbose": Annotated[bool, typer.Option("--verbose", "-v", help="More on stderr.", rich_help_panel=OUTPUT)],
    "script": Annotated[Optional[Path], typer.Option("--script", help="Replies for the scripted provider (JSON).", rich_help_panel=ADVANCED)],
}
_DEFAULTS = {f.name: f.default for f in fields(CommonOptions)}


def with_common_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` every common option; it receives them as one `common: CommonOptions`."""
    own = [p for p in inspect.signature(command).parameters.values() if p.name != "common"]
    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=_DEFAULTS[name],
                               annotation=annotation) for name, annotation in _OPTIONS.items()]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        common = CommonOptions(**{name: kwargs.pop(name) for name in _OPTIONS})
        return command(common=common, **kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + extra
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    return wrapper
