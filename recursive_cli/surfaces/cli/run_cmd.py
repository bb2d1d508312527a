"""`recursive run`: one turn of the agent on a prompt."""

from __future__ import annotations

from .launch import launch, new_launch
from .options import CommonOptions
from .prompt_input import read_prompt


def run_command(common: CommonOptions, words: list[str]) -> int:
    """Exit code of a `run`: usage errors are 2, configuration errors 1, else the outcome's code."""
    prompt = read_prompt(words)
    spec = new_launch(common, "run", prompt)
    if isinstance(spec, int):
        return spec
    return launch(spec, lambda runtime: runtime.run(prompt))
