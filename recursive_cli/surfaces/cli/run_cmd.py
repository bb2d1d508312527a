"""`recursive run`: one turn of the agent on a prompt."""

from __future__ import annotations

from ...launch.options import CommonOptions, RunOptions
from ...launch.prompt_input import read_prompt
from ...launch.run import agent_launch, launch


def run_command(common: CommonOptions, words: list[str], options: RunOptions | None = None) -> int:
    """Exit code of a `run`: usage errors are 2, configuration errors 1, else the outcome's code.

    With `-c` it runs on the conversation of this workspace's latest session; with `-c` and no
    PROMPT that session carries on as `resume --last` would have it.
    """
    options = options or RunOptions()
    prompt = read_prompt(words, read_stdin=not options.no_stdin)
    spec = agent_launch(common, options, "run", prompt)
    if spec.resumed is not None and not prompt:
        from ...launch.sessions import resumed_work  # (only `-c` without a prompt resumes: a run does not load it)

        return launch(spec, resumed_work("", spec.resumed))
    text = spec.output.prompt(prompt)
    return launch(spec, lambda runtime: runtime.run(text))
