"""Typer definitions of the `loop` command(s); registered on the main app by `register`."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `loop` command(s) to `app` (nothing yet)."""
