"""What `sessions import` keeps out of a bundle's session: a bundle is someone else's data.

A session's meta.json holds settings that reach the network (its api base), run code (a
scripted provider's replies, its `--mcp-config` servers, a goal's `--check` commands) or
loosen limits (its permission mode and allow rules, its budgets). Resumed as they were, a
bundle's author would choose where the importer's API key goes and what runs on the
importer's machine. `quarantine` takes them out when the session is imported, says what it
took (kept in meta.json `imported`, shown by `sessions import` and `sessions show`), and
`resume` takes those settings from the importer (features/sessions/resume.py). What only
narrows (deny rules) stays. The bundle's conversation and checkpoints stay too: they run
nothing unless the user restores or resumes, and then under the user's own settings.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..loop.control import STATE_KEY as LOOP_KEY
from ..mcp.config import McpState
from .meta import ImportRecord, SessionBudgets, SessionMeta
from .records import now_iso

GOAL_KEY = "goal"  # drivers/goal_state.py's part (a layer above this one)
SAFE_PROVIDERS = ("openai", "anthropic")  # their official endpoints, with the importer's own key
DEFAULT_MODE = "auto"
SHOWN = 200  # characters of a dropped value shown at most


def quarantine(meta: SessionMeta, source: str, folder: Path) -> list[str]:
    """Strip from `meta` what could reach the network, run code or widen permissions;
    record and return one line per thing taken. `folder` is the session's new folder."""
    dropped = [*_connection(meta), *_permissions(meta), *_budgets(meta)]
    state = dict(meta.state)
    dropped += _mcp(state) + _goal(state)
    _loop(state, folder)
    meta.state = state
    meta.imported = ImportRecord(source=source, at=now_iso(), dropped=dropped)
    return dropped


def _connection(meta: SessionMeta) -> list[str]:
    dropped = []
    if meta.api_base:
        dropped.append(f"its api base {_cut(meta.api_base)} (your --api-base, RECURSIVE_API_BASE or the "
                       "provider's own endpoint is used)")
    if meta.script or meta.provider not in ("", *SAFE_PROVIDERS):
        named = f" {_cut(meta.script)}" if meta.script else ""
        dropped.append(f"its {meta.provider or 'scripted'} provider and replies{named} (they would choose "
                       "the tool calls; yours is used)")
        meta.provider, meta.model = "", ""
    meta.api_base, meta.script = None, None
    return dropped


def _permissions(meta: SessionMeta) -> list[str]:
    dropped = []
    if meta.permission_mode not in ("", DEFAULT_MODE):
        dropped.append(f"its permission mode {_cut(meta.permission_mode)} (yours is used)")
    if meta.allow:
        dropped.append(f"its allow rules {_cut(', '.join(meta.allow))}")
    if meta.sandbox == "off" or meta.sandbox_network or meta.sandbox_allow_ports:
        dropped.append("its sandbox " + ("off" if meta.sandbox == "off" else "with network" if meta.sandbox_network
                                         else "ports " + ", ".join(map(str, meta.sandbox_allow_ports)))
                       + " (yours applies)")
    meta.permission_mode, meta.allow, meta.sandbox, meta.sandbox_network = "", [], None, False
    meta.sandbox_allow_ports = []
    return dropped


def _budgets(meta: SessionMeta) -> list[str]:
    budgets = meta.budgets
    limits = [f"{name} {value:g}" for name, value in (("--max-cost", budgets.max_cost),
                                                      ("--max-steps", budgets.max_steps)) if value is not None]
    meta.budgets = SessionBudgets(max_duration=budgets.max_duration)
    return [f"its budgets {', '.join(limits)} (yours apply)"] if limits else []


def _mcp(state: dict[str, Any]) -> list[str]:
    saved = state.pop(McpState.key, None)
    if not isinstance(saved, dict) or not saved.get("configs"):
        return []
    names = [name for config in saved["configs"] for name in _server_names(str(config))]
    return [f"its MCP servers {_cut(', '.join(names))} (they are commands; pass --mcp-config to use servers)"]


def _server_names(config: str) -> list[str]:
    """The server names of a saved `--mcp-config` value (JSON text), else the value itself."""
    try:
        servers = json.loads(config).get("mcpServers")
    except (ValueError, AttributeError):
        return [config]
    return [str(name) for name in servers] if isinstance(servers, dict) and servers else [config]


def _goal(state: dict[str, Any]) -> list[str]:
    goal = state.get(GOAL_KEY)
    if not isinstance(goal, dict) or not goal.get("checks"):
        return []
    checks = ", ".join(f"`{check}`" for check in goal["checks"])
    state[GOAL_KEY] = {**goal, "checks": []}
    return [f"its goal checks {_cut(checks)} (they are commands; give your own with "
            "`recursive goal -c PROMPT --check CMD`)"]


def _loop(state: dict[str, Any], folder: Path) -> None:
    """Background jobs ran on the author's machine: here they are lost, and an output file
    outside the session folder (any file of the importer's the bundle names) is never read."""
    loop = state.get(LOOP_KEY)
    if not isinstance(loop, dict) or not isinstance(loop.get("jobs"), list):
        return
    jobs = []
    for job in loop["jobs"]:
        if not isinstance(job, dict):
            continue
        output = Path(str(job.get("output", "")))
        inside = output.is_absolute() and output.resolve().is_relative_to(folder.resolve())
        status = "lost" if job.get("status") == "running" else job.get("status")
        ended = job.get("ended") or (time.time() if status == "lost" else None)
        jobs.append({**job, "status": status, "pgid": 0, "ended": ended,
                     "output": str(output) if inside else str(folder / "jobs" / "missing.log")})
    state[LOOP_KEY] = {**loop, "jobs": jobs}


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
