"""`recursive trust [DIR]`, `recursive trust --list`, `recursive trust --revoke DIR`: the
folders whose own hooks, MCP servers and loosening config keys take effect (features/trust/).

The typer definition is here too (registered by `register`); the trust feature is imported
only when the command runs.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ...core.errors import CliError
from ...launch.errors import EXIT_ERROR, EXIT_USAGE

EPILOG = """[b]Examples[/b]

  recursive trust

  recursive trust ~/src/cloned-repo

  recursive trust --list --json | jq -r '.[] | select(.state != "trusted") | .path'

  recursive trust --revoke ~/src/cloned-repo
"""


def register(app: typer.Typer) -> None:
    """Add the `trust` command to `app`."""
    app.command(epilog=EPILOG)(trust)


def trust(
    folder: Annotated[Optional[Path], typer.Argument(metavar="DIR", help="The folder to trust (default: the current one).", show_default=False)] = None,
    list_trusted: Annotated[bool, typer.Option("--list", help="List the trusted folders and whether each is still as you trusted it.")] = False,
    revoke: Annotated[Optional[Path], typer.Option("--revoke", metavar="DIR", help="Trust DIR no longer.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list (with --list).")] = False,
) -> None:
    """Trust a folder's own configuration: its hooks (.claude/settings.json, .claude/settings.local.json, .recursive/settings.json), its .mcp.json servers, its skills (.claude/skills, .agents/skills) and the keys of its .recursive/config.toml that loosen yours take effect there, until one of those files changes. Shows what it trusts first."""
    raise typer.Exit(trust_command(folder, list_trusted, revoke, json_output))


def trust_command(folder: Optional[Path], list_trusted: bool, revoke: Optional[Path], as_json: bool) -> int:
    """Record, list or revoke; the exit code."""
    if sum((folder is not None, list_trusted, revoke is not None)) > 1:
        raise CliError("give one of DIR, --list and --revoke DIR", EXIT_USAGE)
    if as_json and not list_trusted:
        raise CliError("--json goes with --list", EXIT_USAGE)
    from ...core.errors import ConfigError
    from ...core.settings import default_home

    home = default_home()
    try:
        if list_trusted:
            return list_command(home, as_json)
        if revoke is not None:
            return revoke_command(home, revoke)
        return record_command(home, folder or Path.cwd())
    except ConfigError as exc:  # a config file or trust.json that cannot be read or written
        raise CliError(str(exc), EXIT_ERROR) from None


def record_command(home: Path, folder: Path) -> int:
    """Show what `folder`'s own configuration would do, then record it as trusted."""
    from ...core.settings import loosening_keys
    from ...features.trust import workspace_offer
    from ...features.trust.store import TrustStore

    workspace = folder.expanduser()
    if not workspace.is_dir():
        raise CliError(f"not a folder: {folder}", EXIT_USAGE)
    workspace = workspace.resolve()
    offer = workspace_offer(workspace, home, os.environ, loosening_keys(workspace, home))
    if offer:
        sys.stdout.write(f"trusting {workspace}: from now on these run or take effect there:\n")
        sys.stdout.writelines(f"  {line}\n" for line in offer.lines())
    else:
        sys.stdout.write(f"trusting {workspace} (no hooks, MCP servers, skills or loosening config keys of its own yet)\n")
    record = TrustStore(home).trust(workspace)
    files = ", ".join(record.files) or "none yet"
    sys.stdout.write(f"trusted; a change to one of its config files ({files}), or a new one, makes it "
                     "untrusted again\n")
    return 0


def list_command(home: Path, as_json: bool) -> int:
    """Each trusted folder: whether it is still as trusted (`trusted`), changed or gone."""
    from ...features.trust.store import TrustStore

    rows = [_row(path, record, home) for path, record in TrustStore(home).read().folders.items()]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif not rows:
        sys.stderr.write("no trusted folders (trust one with `recursive trust DIR`)\n")
    else:
        for row in rows:
            state = row["state"] + (": " + ", ".join(row["changed"]) if row["changed"] else "")
            sys.stdout.write(f"{row['path']}\t{state}\t{row['trusted_at']}\n")
    return 0


def _row(path: str, record: Any, home: Path) -> dict[str, Any]:
    from ...features.trust.store import changed_files, fingerprint

    folder = Path(path)
    changed = changed_files(record, fingerprint(folder, home)) if folder.is_dir() else []
    state = "gone" if not folder.is_dir() else "changed" if changed else "trusted"
    return {"path": path, "state": state, "changed": changed, "trusted_at": record.trusted_at,
            "files": record.files}


def revoke_command(home: Path, folder: Path) -> int:
    """Forget `folder`'s trust."""
    from ...features.trust.store import TrustStore

    revoked = TrustStore(home).revoke(str(folder))
    if revoked is None:
        raise CliError(f"{folder} is not a trusted folder (see `recursive trust --list`)")
    sys.stdout.write(f"no longer trusted: {revoked}\n")
    return 0
