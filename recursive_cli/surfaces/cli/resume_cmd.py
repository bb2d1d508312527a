"""`recursive resume`: continue a saved session with its own settings (SPEC §5); and `-c`,
which continues this workspace's latest session from `run`, `loop` or `goal`."""

from __future__ import annotations

from ...launch.final_answer import output_request
from ...launch.options import CommonOptions, RunOptions
from ...launch.prompt_input import read_prompt
from ...launch.run import launch, with_run_options
from ...launch.sessions import open_session, resumed_work
from ...launch.stdio import on_terminal


def resume_command(common: CommonOptions, words: list[str], last: bool,
                   options: RunOptions | None = None) -> int:
    """Resume SESSION (or this workspace's latest) with PROMPT, or carry on where it stopped."""
    options = options or RunOptions()
    output = output_request(options.output_last_message, options.output_schema)  # (OutputOptionError: exit 2)
    ref, prompt_words = (None, words) if last or not words else (words[0], words[1:])
    prompt = read_prompt(prompt_words, read_stdin=not options.no_stdin, notice=True)
    spec = open_session(common, ref)
    spec.output = output
    with_run_options(spec, options)
    assert spec.resumed is not None
    if not prompt and spec.resumed.meta.mode == "run" and _at_terminal(common, options):
        from ..chat.start import chat_resumed  # no prompt, at a terminal: the conversation goes on here

        return chat_resumed(common, options, spec)
    return launch(spec, resumed_work(output.prompt(prompt), spec.resumed))


def _at_terminal(common: CommonOptions, options: RunOptions) -> bool:
    """Whether `resume` with no prompt opens the interactive session: text output, no
    output files, stdin and stdout terminals."""
    output = getattr(common.output_format, "value", common.output_format)
    return (output in (None, "text") and not options.output_last_message
            and not options.output_schema and on_terminal())
