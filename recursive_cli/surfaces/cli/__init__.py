"""The command-line interface (typer). Modules here import the runtime only inside commands."""

from ...launch.errors import pause_for_startup

pause_for_startup()  # the CLI's own process: no collections while its modules load (errors.py)
