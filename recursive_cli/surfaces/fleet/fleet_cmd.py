"""Typer definitions of `recursive fleet run | status | resume`; registered on the main app by
`register`. The work is in commands.py, imported when a command runs (Ray only then too)."""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ...launch.options import (
    ADVANCED,
    BUDGETS,
    MODEL,
    OUTPUT,
    SAFETY,
    OutputFormat,
    PermissionMode,
    ProviderName,
    SandboxMode,
    directory_value,
    duration_value,
    permission_rules,
    positive_cost,
)

FLEET = "Fleet"
GOAL = "Goal (defaults for goal tasks)"

fleet_app = typer.Typer(
    help="Many goal or run tasks at once on Ray: a local Ray started in-process, or a cluster.",
    no_args_is_help=True)

Address = Annotated[Optional[str], typer.Option("--address", metavar="ADDRESS", help="Ray to use: auto, ray://HOST:10001, or a cluster's address (default: RAY_ADDRESS, else a local Ray started in this process).", rich_help_panel=FLEET)]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", min=1, metavar="N", help="Tasks in flight at once, 1 or more (default: as many as the cluster has CPUs for).", rich_help_panel=FLEET)]
Retries = Annotated[int, typer.Option("--retries", min=0, metavar="N", help="Retries of a task whose process or worker died, 0 or more; a retry resumes its session.", rich_help_panel=FLEET)]
Output = Annotated[Optional[OutputFormat], typer.Option("--output-format", "-o", metavar="FORMAT", help="text (results folder on stdout), json (the summary) or stream-json (a line per task event).", rich_help_panel=OUTPUT, show_default=False)]  # type: ignore[valid-type]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no summary table on stderr.", rich_help_panel=OUTPUT)]


def _value(choice: Any) -> Any:
    """The string of a choice enum member (None when not given)."""
    return None if choice is None else choice.value


def register(app: typer.Typer) -> None:
    """Add the `fleet` command group to `app`."""
    app.add_typer(fleet_app, name="fleet")


@fleet_app.command("run", epilog="""[b]Examples[/b]

  recursive fleet run tasks.jsonl --concurrency 8 --max-cost 20 --results nightly

  recursive fleet run tasks.jsonl --check "pytest -q" --max-turns 6 -m gpt-4.1 -o stream-json | jq -c 'select(.type=="fleet")'

  recursive fleet run tasks.jsonl --address ray://head:10001 --memory 4G --retries 3
""")
def fleet_run(
    tasks: Annotated[Path, typer.Argument(metavar="TASKS.jsonl", help="One task per line: {\"id\", \"prompt\", \"workspace\" (folder, or git URL with \"ref\"), \"mode\", \"checks\", \"until\", \"max_turns\", budgets, model…}.", show_default=False)],
    results: Annotated[Optional[Path], typer.Option("--results", metavar="DIR", help="Folder for results.jsonl, session bundles and logs (default: ./fleet-DATE-TIME).", rich_help_panel=FLEET)] = None,
    address: Address = None,
    concurrency: Concurrency = None,
    retries: Retries = 2,
    max_cost: Annotated[Optional[float], typer.Option("--max-cost", metavar="USD", callback=positive_cost, help="USD for the whole fleet: no task starts once it is spent; each task's session is capped at what is left.", rich_help_panel=BUDGETS)] = None,
    memory: Annotated[Optional[str], typer.Option("--memory", metavar="SIZE", help="Memory each task asks Ray for, e.g. 2G, 512Mi.", rich_help_panel=FLEET)] = None,
    num_cpus: Annotated[Optional[float], typer.Option("--num-cpus", min=0.01, metavar="N", help="CPUs each task asks Ray for (default 1).", rich_help_panel=FLEET)] = None,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-C", metavar="DIR", callback=directory_value, help="Workspace of the tasks that name none (default: current directory).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", metavar="CONDITION", help="Condition a judge must agree holds, for tasks that set none.", rich_help_panel=GOAL)] = None,
    check: Annotated[Optional[list[str]], typer.Option("--check", metavar="CMD", help="Shell command that must exit 0 after a turn (repeatable), for tasks that set none.", rich_help_panel=GOAL)] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", min=1, metavar="N", help="Turns a goal task gets, 1 or more (default 10).", rich_help_panel=GOAL)] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", metavar="MODEL", help="Model for the judge (default: the task's model).", rich_help_panel=GOAL)] = None,
    check_timeout: Annotated[Optional[str], typer.Option("--check-timeout", metavar="SECONDS", help="Kill a check after this long, e.g. 90, 90s, 5m.", rich_help_panel=GOAL)] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", metavar="MODEL", help="Model name (default: the provider's).", rich_help_panel=MODEL)] = None,
    provider: Annotated[Optional[ProviderName], typer.Option("--provider", metavar="PROVIDER", help="openai, anthropic or scripted.", rich_help_panel=MODEL, show_default=False)] = None,  # type: ignore[valid-type]
    api_base: Annotated[Optional[str], typer.Option("--api-base", metavar="URL", help="Base URL of the API, e.g. http://127.0.0.1:11434/v1.", rich_help_panel=MODEL)] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", min=1, metavar="N", help="LLM calls per turn, 1 or more (default 100).", rich_help_panel=BUDGETS)] = None,
    max_duration: Annotated[Optional[str], typer.Option("--max-duration", metavar="DURATION", callback=duration_value, help="Wall clock of each task, e.g. 90s, 20m, 2h.", rich_help_panel=BUDGETS)] = None,
    permission_mode: Annotated[Optional[PermissionMode], typer.Option("--permission-mode", metavar="MODE", help="auto, accept-edits, read-only, plan (each task's answer is its plan) or ask (ask denies: tasks run headless).", rich_help_panel=SAFETY, show_default=False)] = None,  # type: ignore[valid-type]
    allow: Annotated[Optional[list[str]], typer.Option("--allow", metavar="RULE", callback=permission_rules, help="Allow rule like 'run_shell(git *)' (repeatable).", rich_help_panel=SAFETY)] = None,
    deny: Annotated[Optional[list[str]], typer.Option("--deny", metavar="RULE", callback=permission_rules, help="Deny rule like 'write_file(secrets/**)' (repeatable); deny wins.", rich_help_panel=SAFETY)] = None,
    sandbox: Annotated[Optional[SandboxMode], typer.Option("--sandbox", metavar="MODE", help="What the tasks' commands may write: read-only, workspace-write or off (default: by the permission mode).", rich_help_panel=SAFETY, show_default=False)] = None,  # type: ignore[valid-type]
    sandbox_network: Annotated[bool, typer.Option("--sandbox-network", help="Let the tasks' commands reach the network.", rich_help_panel=SAFETY)] = False,
    system_prompt: Annotated[Optional[str], typer.Option("--system-prompt", metavar="TEXT", help="Replace the built-in system prompt.", rich_help_panel=ADVANCED)] = None,
    append_system_prompt: Annotated[Optional[str], typer.Option("--append-system-prompt", metavar="TEXT", help="Extend the system prompt.", rich_help_panel=ADVANCED)] = None,
    add_dir: Annotated[Optional[list[Path]], typer.Option("--add-dir", metavar="DIR", help="Another root the file tools may use (repeatable).", rich_help_panel=ADVANCED)] = None,
    no_checkpoints: Annotated[bool, typer.Option("--no-checkpoints", help="No workspace snapshots.", rich_help_panel=ADVANCED)] = False,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Ask the provider for whole responses.", rich_help_panel=ADVANCED)] = False,
    script: Annotated[Optional[Path], typer.Option("--script", metavar="FILE", help="Replies for the scripted provider (JSON).", rich_help_panel=ADVANCED)] = None,
    output_format: Output = None,
    quiet: Quiet = False,
) -> None:
    """Run every task of TASKS.jsonl, each as its own agent session on Ray; one line per task in DIR/results.jsonl.

    The flags give every task its defaults; a task's own fields win. A task whose process or worker dies is retried and resumes its session; what the agent did (goal not met, budget, stuck) is its result. Exit 0 when every task succeeded, else the exit code of the worst outcome.
    """
    from .commands import RunRequest, run_command

    defaults = {"until": until, "checks": check, "max_turns": max_turns, "judge_model": judge_model,
                "check_timeout": check_timeout, "model": model, "provider": _value(provider),
                "api_base": api_base, "script": script and str(script.expanduser().resolve()),
                "max_steps": max_steps, "max_duration": max_duration,
                "permission_mode": _value(permission_mode), "allow": allow, "deny": deny,
                "system_prompt": system_prompt, "append_system_prompt": append_system_prompt,
                "add_dir": [str(p.expanduser().resolve()) for p in add_dir] if add_dir else None,
                "no_checkpoints": no_checkpoints or None, "no_stream": no_stream or None,
                "sandbox": _value(sandbox), "sandbox_network": sandbox_network or None,
                "num_cpus": num_cpus, "memory": memory}
    request = RunRequest(tasks_file=tasks, results=results, address=address, concurrency=concurrency,
                         retries=retries, max_cost=max_cost, workspace=workspace, defaults=defaults,
                         output_format=_value(output_format) or "text", quiet=quiet)
    raise typer.Exit(run_command(request))


@fleet_app.command("status", epilog="""[b]Examples[/b]

  recursive fleet status nightly

  recursive fleet status nightly --json | jq -r '.results[] | select(.subtype != "success") | .id'
""")
def fleet_status(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A fleet's results folder.", show_default=False)],
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
) -> None:
    """Summarise a fleet's results folder: each task's outcome, steps, cost and time, and the totals."""
    from .commands import status_command

    raise typer.Exit(status_command(folder, json_output))


@fleet_app.command("resume", epilog="""[b]Examples[/b]

  recursive fleet resume nightly

  recursive fleet resume nightly --concurrency 2 -o stream-json
""")
def fleet_resume(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A fleet's results folder.", show_default=False)],
    address: Address = None,
    concurrency: Concurrency = None,
    retries: Annotated[Optional[int], typer.Option("--retries", min=0, metavar="N", help="Retries of a task whose process or worker died (default: the fleet's).", rich_help_panel=FLEET)] = None,
    output_format: Output = None,
    quiet: Quiet = False,
) -> None:
    """Run again the tasks of a fleet that did not succeed, with its tasks file and options; a task with a session continues it."""
    from .commands import ResumeRequest, resume_command

    request = ResumeRequest(folder=folder, address=address, concurrency=concurrency, retries=retries,
                            output_format=_value(output_format) or "text", quiet=quiet)
    raise typer.Exit(resume_command(request))
