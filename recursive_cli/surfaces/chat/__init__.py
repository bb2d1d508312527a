"""The interactive session: `recursive` alone on a terminal, `recursive chat`, `resume ID` on a TTY.

One runtime per session, launched as `run` launches it (launch/run.py), so the
session is written as a `run` writes it and the workspace's hooks and MCP servers apply; the
conversation goes on turn after turn over `AgentRuntime.run`.

    start.py      the commands' entry: which session, the launch, /clear and /resume between them
    session.py    ChatSession: the loop of prompts and turns, Ctrl-C, the typed-ahead queue
    input.py      the input line (prompt_toolkit): history per workspace, multi-line, completion
    typeahead.py  the terminal while a turn runs: keys read one by one, lines queued, y/n/a answers
    render.py     ChatSink: the turn as `run` shows it, the answer as Markdown, a status line
    commands.py   the slash commands
    passthrough.py  `!COMMAND`: the person's own shell command, its output for the next message
    preview.py    what an ask-mode question shows first: the diff, the whole command
    history.py    a resumed conversation, shown again

prompt_toolkit is imported only here, and only when a session opens.
"""
