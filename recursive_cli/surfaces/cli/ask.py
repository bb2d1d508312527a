"""`--permission-mode ask` on a terminal: `[y]es / [n]o / [a]lways for this tool` on stderr."""

from __future__ import annotations

import asyncio
import sys

from ...features.permissions import AskHook, PermissionPolicy


def terminal_ask_hook(policy: PermissionPolicy) -> AskHook | None:
    """A hook that asks on the terminal, or None when stdin or stderr is not a TTY (headless)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def ask(tool: str, subject: str) -> bool:
        question = f"Allow {tool} {subject}? [y]es / [n]o / [a]lways for this tool: "
        while True:
            sys.stderr.write(question)
            sys.stderr.flush()
            line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            answer = line.strip().lower()[:1]
            if answer == "a":
                policy.remember(tool)
                return True
            if answer in ("y", "n") or not line:
                return answer == "y"

    return ask
