"""The way into an interactive session: which session, launched as `run` launches one, and
the next one when `/clear` or `/resume ID` ends it."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core import utf8
from ...core.errors import CliError
from ...launch.errors import EXIT_USAGE
from ...launch.options import CommonOptions, RunOptions
from ...launch.run import Launch, fresh_launch, launch, with_run_options
from ...launch.stdio import on_terminal

if TYPE_CHECKING:
    from .session import ChatSession


def chat_command(common: CommonOptions, words: list[str], options: RunOptions | None = None) -> int:
    """`recursive chat [PROMPT]` (and `recursive` alone on a terminal): a new session, or with
    `-c` this workspace's latest one; PROMPT, when given, is its first message."""
    options = options or RunOptions()
    refuse(common, options)
    prompt = utf8.scrub(" ".join(words)).strip()
    if options.worktree is not None:  # (a new session in a new worktree; /clear's next one there too)
        from ...launch.worktree import enter_worktree

        common, worktree = enter_worktree(common, options.worktree, options.continue_session)
        spec = new_chat_launch(common)
        spec.worktree = worktree
    elif options.continue_session:
        from ...launch.sessions import continue_launch

        spec = continue_launch(common, "run", "")
    else:
        spec = new_chat_launch(common)
    return chat_loop(common, options, spec, prompt)


def chat_resumed(common: CommonOptions, options: RunOptions, spec: Launch) -> int:
    """`recursive resume ID` with no prompt on a terminal: the session goes on interactively."""
    try:
        refuse(common, options)
    except CliError:
        if spec.lock is not None:
            spec.lock.release()
        raise
    return chat_loop(common, options, spec, "")


def refuse(common: CommonOptions, options: RunOptions) -> None:
    """CliError (exit 2) when these options cannot open an interactive session."""
    problem = refused(common, options)
    if problem:
        raise CliError(problem, EXIT_USAGE)


def refused(common: CommonOptions, options: RunOptions) -> str:
    """Why these options cannot open an interactive session ("" when they can)."""
    if not on_terminal():
        return ("the interactive session needs a terminal (stdin and stdout); "
                "in scripts use `recursive run PROMPT`")
    output = getattr(common.output_format, "value", common.output_format)
    if output not in (None, "text"):
        return f"the interactive session shows text, not -o {output}; use `recursive run -o {output}`"
    if options.output_last_message or options.output_schema:
        flag = "--output-last-message" if options.output_last_message else "--output-schema"
        return f"{flag} is for `recursive run`; the interactive session has no last message"
    return ""


def new_chat_launch(common: CommonOptions) -> Launch:
    """Settings and a fresh session id for a new interactive session (no prompt needed yet)."""
    return fresh_launch(common, "run")


def chat_loop(common: CommonOptions, options: RunOptions, spec: Launch, prompt: str) -> int:
    """Run sessions one after another: the first, then the one `/clear` or `/resume` asks for;
    before each, on an untrusted workspace, whether to trust it (once per folder)."""
    from .session import ChatSession
    from .trust_prompt import ask_trust

    asked: dict[Path, bool] = {}
    while True:
        spec = ask_trust(spec, asked, lambda: new_chat_launch(common))
        if spec.resumed is not None and spec.mode != "run":  # its driver carries it on, not a person
            if spec.lock is not None:
                spec.lock.release()
            raise CliError(f"session {spec.session_id} is a {spec.mode} session: continue it with "
                           f"`recursive resume {spec.session_id}`, or start a new one with `recursive chat`")
        with_run_options(spec, options)
        chat = ChatSession(spec, prompt)
        spec.sinks = chat.sinks
        code = launch(spec, chat.run)
        _drop_if_empty(spec, chat)
        if chat.then is None:
            return code
        prompt = ""
        if chat.then == "":
            spec = new_chat_launch(replace(common, session_id=None))  # (that id is taken now)
        else:
            from ...launch.sessions import open_session

            spec = open_session(common, chat.then)


def _drop_if_empty(spec: Launch, chat: ChatSession) -> None:
    """A new session the user left before saying anything is not kept (nothing to resume)."""
    settings = spec.loaded.settings
    if spec.resumed is not None or settings.no_session or chat.turns:
        return
    from ...features.sessions.records import SessionError
    from ...features.sessions.store import SessionStore

    with contextlib.suppress(SessionError, OSError):
        SessionStore(spec.loaded.home).remove(spec.session_id)
