"""The system prompt: where the agent is, what it has, how to work, and the project's own instructions."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
INSTRUCTIONS_CAP = 16 * 1024

GUIDANCE = """\
You are recursive, a coding agent working in a user's workspace through tools.
- Read files before editing them. Prefer edit_file or apply_patch over rewriting whole files.
- Keep changes focused on the task. After changing code, run the project's tests when it has them.
- Use run_shell for builds, tests and git; its output is capped, so filter long output.
- When the task is done, stop calling tools and answer briefly: what you did and what is left."""

PLAN_NOTE = """\
Plan mode is on: the user wants a plan before anything changes. Read, search and think; run
only read-only shell commands. Do not write or edit files, or run commands that change anything:
such calls are refused. When you know what to do, call exit_plan_mode with the plan (the
changes file by file, and how you will check them); that ends the turn. The user approves it
and then asks you to carry it out."""


def project_instructions(workspace: Path) -> str:
    """The workspace's AGENTS.md (else CLAUDE.md), capped at 16 KiB, or ''."""
    for name in INSTRUCTION_FILES:
        path = workspace / name
        try:
            data = path.read_bytes()
        except OSError:
            continue
        text = data[:INSTRUCTIONS_CAP].decode("utf-8", errors="replace")
        note = f"\n[{name} was cut at 16 KiB of {len(data)} bytes]" if len(data) > INSTRUCTIONS_CAP else ""
        return f"Project instructions from {name}:\n{text}{note}"
    return ""


def build_system_prompt(workspace: Path, tools: list[str], note: str = "", *,
                        replace: str | None = None, append: str | None = None, sandbox: str = "",
                        instructions: bool = True, plan: bool = False, skills: str = "") -> str:
    """Compose the system prompt: guidance, environment (with `sandbox`: what commands may
    do) and the mode's `note` (its driver's); `replace` swaps the built-in part, `append`
    extends it; the workspace's AGENTS.md or CLAUDE.md unless not `instructions` (`--bare`);
    with `plan`, what plan mode expects (after `replace` too: the refusals need explaining);
    `skills`: the skills offered, by name and description (features/skills), after `replace` too."""
    base = replace if replace is not None else "\n\n".join(part for part in [
        GUIDANCE,
        _environment(workspace, tools) + (f"\nSandbox: {sandbox}" if sandbox else ""),
        note,
        f"Date: {datetime.date.today().isoformat()}",  # after the rest: it alone changes by itself (_environment)
    ] if part)
    parts = [base, PLAN_NOTE if plan else "", skills, project_instructions(workspace) if instructions else "",
             append or ""]
    return "\n\n".join(part for part in parts if part)


def _environment(workspace: Path, tools: list[str]) -> str:
    """Where the agent is. Nothing here changes from step to step, or from one session to the
    next in the same workspace: the request's prefix stays byte-stable, so a provider's prompt
    cache keeps it (bench/prompt_cache.py). The date, which does change, comes after the rest of the built-in part."""
    shell = os.environ.get("SHELL", "/bin/sh")
    return (f"Workspace: {workspace}\nOS: {platform.system()} {platform.release()}\nShell: {shell}\n"
            f"Tools: {', '.join(tools)}")
