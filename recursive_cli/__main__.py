"""`python -m recursive_cli` runs the CLI."""

from .surfaces.cli.app import main

main()
