"""`kill -9` of a process that is writing a session: what was emitted is on disk and loads."""

from __future__ import annotations

import random
import signal
import subprocess
import sys

from recursive_cli.features.sessions.reader import load_session, repair_orphans

CHILD = r"""
import sys
from pathlib import Path
from recursive_cli.core.events import MessageAdded, TurnStarted
from recursive_cli.core.messages import Message, ToolCall
from recursive_cli.features.sessions.meta import SessionMeta
from recursive_cli.features.sessions.writer import JsonlSessionWriter

writer = JsonlSessionWriter.create(Path(sys.argv[1]), SessionMeta(id="k", workspace="/"))
writer.emit(TurnStarted(turn=1, prompt="go"))
writer.emit(MessageAdded(message=Message.user("go"), turn=1))
for i in range(1_000_000):
    call = ToolCall(id=f"c{i}", name="run_shell", arguments='{"command": "true"}')
    writer.emit(MessageAdded(message=Message(role="assistant", tool_calls=(call,)), turn=1))
    writer.emit(MessageAdded(message=Message.tool_result(call, "x" * (i % 3000)), turn=1))
    print(i, flush=True)
"""


def test_sigkill_at_random_points_loses_nothing_that_was_emitted(tmp_path):
    rng = random.Random(1234)
    for trial in range(4):
        folder = tmp_path / f"k{trial}"
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder)], stdout=subprocess.PIPE,
                                 text=True)
        target = rng.randint(1, 400)
        reported = -1
        assert child.stdout is not None
        while reported < target:
            reported = int(child.stdout.readline())
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        loaded = load_session(folder)
        # the prompt, then a call and its result per reported step (maybe more after it)
        assert len(loaded.messages) >= 1 + 2 * (reported + 1)
        assert all("torn last line" in warning for warning in loaded.warnings)
        repaired, added = repair_orphans(loaded.messages)
        assert len(added) <= 1
        calls = [c.id for m in repaired for c in m.tool_calls]
        results = [m.tool_call_id for m in repaired if m.role == "tool"]
        assert calls == results
