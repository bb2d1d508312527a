"""The interactive session's question about an untrusted workspace: once per folder, showing
the hooks, MCP servers and config keys of its own that would run or take effect; `y` records
it as trusted (as `recursive trust` does), anything else goes on without them, quietly."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ...launch.run import Launch


def ask_trust(spec: Launch, asked: dict[Path, bool], reload: Callable[[], Launch]) -> Launch:
    """`spec`, its workspace trusted if the user says so (then `reload`ed: a new session's
    settings take in the workspace's config keys); asked once per folder (`asked`: each
    folder's answer so far), and a folder declined is left out without a note."""
    from ...features.trust import verdict_for, workspace_offer
    from ...features.trust.store import TrustStore

    loaded = spec.loaded
    verdict = verdict_for(loaded, loaded.settings.workspace.expanduser())
    if not verdict.skips:
        return spec
    if verdict.workspace not in asked:
        same = loaded.trust is not None and loaded.trust.workspace == verdict.workspace
        offer = workspace_offer(verdict.workspace, loaded.home, loaded.env, loaded.held if same else [])
        asked[verdict.workspace] = bool(offer) and _yes(verdict.workspace, verdict.reason, offer.lines())
        if asked[verdict.workspace]:
            TrustStore(loaded.home).trust(verdict.workspace)
            if spec.resumed is None:
                return reload()
    if asked[verdict.workspace]:  # (a resumed session keeps its settings: its hooks and servers now count)
        loaded.trust = TrustStore(loaded.home).check(verdict.workspace)
    else:
        loaded.trust = verdict._replace(quiet=True)
    return spec


def _yes(workspace: Path, reason: str, lines: list[str]) -> bool:
    """Show what would run and ask; Enter, `n` or end of input is no."""
    out = sys.stdout
    out.write(f"{workspace} has configuration of its own ({reason}):\n")
    out.writelines(f"  {line}\n" for line in lines)
    try:
        answer = input("Trust this folder, so that these run and take effect here? [y/N] ")
    except EOFError:
        answer = ""
    trusted = answer.strip().lower() in ("y", "yes")
    out.write("trusted (`recursive trust --revoke .` undoes it)\n" if trusted else "going on without them\n")
    return trusted
