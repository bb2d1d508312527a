"""`python -m recursive_cli` runs the CLI."""

from .cli.app import main

main()
