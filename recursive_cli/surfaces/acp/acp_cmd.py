"""Typer definition of `recursive acp` (the Agent Client Protocol on stdio); registered by `register`."""


import typer

from ...launch.options import CommonOptions, with_common_options

EPILOG = """[b]Examples[/b]

  recursive acp

  recursive acp -m gpt-4.1 --permission-mode accept-edits

  (in Zed's settings.json) "agent_servers": {"recursive": {"command": "recursive", "args": ["acp"]}}
"""


def register(app: typer.Typer) -> None:
    """Add the `acp` command to `app`."""
    app.command(epilog=EPILOG)(acp)


@with_common_options
def acp(
    *,
    common: CommonOptions,
) -> None:
    """Serve an editor over the Agent Client Protocol on stdin/stdout (Zed, JetBrains, Neovim…).

    The editor starts this command and speaks JSON-RPC to it: each of its sessions is one of ours (saved, and `session/load` resumes it), tool calls stream to it with their diffs, and `--permission-mode ask` (the default here unless configured) asks it before edits and commands. Needs the agent-client-protocol package (the acp extra of recursive-cli).
    """
    from .main import acp_command

    raise typer.Exit(acp_command(common))
