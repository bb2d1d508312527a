"""`!COMMAND` in the interactive session: the person's own shell command, run as the agent's
`run_shell` runs one (the same sandbox, process group, time and output limits; Ctrl-C or Esc
stops it), its output shown, and both given to the model with the next message, as Claude
Code's `!` does. The model's guards are not asked: the command is the person's, never the
model's.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...core.errors import Interrupted
from ...core.messages import ToolCall
from ...core.tool import ToolResult

if TYPE_CHECKING:
    from .session import ChatSession

NOTE = "(I ran a shell command myself; its output, for the message after it)\n$ {command}\n{output}"


async def run_passthrough(chat: ChatSession, command: str) -> str:
    """Run `command` and show its output; the note for the next message ("" when it did not run)."""
    runtime, sink = chat.runtime, chat.sink
    if "run_shell" not in runtime.tools.names():
        sink.line("error: `!` runs commands through run_shell, which this session does not have", "red")
        return ""
    call = ToolCall(id="user-shell", name="run_shell", arguments=json.dumps({"command": command}))
    done: list[ToolResult] = []

    async def run() -> None:
        try:
            done.append(await runtime.interrupt_token.race(runtime.tools.execute(call, runtime.tool_context)))
        except Interrupted:
            pass  # (the command's processes are stopped as the call is cancelled)

    await chat.busy(run())
    if not done:
        sink.line("interrupted", "yellow")
        return ""
    result = done[0]
    output, _, status = result.content.rpartition("\n\n")  # (run_shell: the output, notes, then the exit code)
    for line in output.splitlines():
        sink.line(line)
    sink.line(status, "red" if result.is_error else "dim")
    return NOTE.format(command=command, output=result.content)
