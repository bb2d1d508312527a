"""Typer definitions of the `goal` command(s); registered on the main app by `register`."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `goal` command(s) to `app` (nothing yet)."""
