"""`recursive run`: one turn of the agent on a prompt."""

from __future__ import annotations

from ..sessions.ids import check_session_id, new_session_id
from ..settings import ConfigError, load_settings
from .errors import EXIT_USAGE, fail
from .launch import Launch, launch
from .options import CommonOptions
from .prompt_input import read_prompt


def run_command(common: CommonOptions, words: list[str]) -> int:
    """Exit code of a `run`: usage errors are 2, configuration errors 1, else the outcome's code."""
    prompt = read_prompt(words)
    if not prompt:
        return fail("empty prompt: give a PROMPT argument or pipe text on stdin", EXIT_USAGE)
    try:
        loaded = load_settings(common.as_flags())
    except ConfigError as exc:
        return fail(str(exc))
    session_id = loaded.settings.session_id or new_session_id()
    problem = check_session_id(session_id)
    if problem:
        return fail(problem, EXIT_USAGE)
    return launch(Launch(loaded, "run", session_id, title=prompt), lambda runtime: runtime.run(prompt))
