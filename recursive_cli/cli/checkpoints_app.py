"""Typer definitions of the `checkpoints` command(s); registered on the main app by `register`."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `checkpoints` command(s) to `app` (nothing yet)."""
