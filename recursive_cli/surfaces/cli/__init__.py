"""The command-line interface (typer). Modules here import the runtime only inside commands."""
