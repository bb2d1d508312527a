"""How fast sessions are written and loaded: prints timings for 1k, 10k and 100k messages.

Run: python bench/session_load.py
Each session is written through the real JsonlSessionWriter (a prompt, then assistant
messages with a tool call and usage, each followed by a ~500-byte tool result), then loaded
with load_session and paired with repair_orphans, as `recursive resume` does.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from recursive_cli.core.events import MessageAdded, TurnStarted
from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.features.sessions.meta import SessionMeta
from recursive_cli.features.sessions.reader import load_session, repair_orphans
from recursive_cli.features.sessions.writer import JsonlSessionWriter

SIZES = (1_000, 10_000, 100_000)
RESULT = ("line of tool output with some text in it\n" * 12)[:500]


def messages(count: int) -> list[Message]:
    """`count` messages: a prompt, then alternating assistant tool calls and their results."""
    out = [Message.user("refactor the parser")]
    step = 0
    while len(out) < count:
        call = ToolCall(id=f"call_{step}", name="read_file", arguments=f'{{"path": "src/m{step}.py"}}')
        out.append(Message(role="assistant", content="Reading the next module.", tool_calls=(call,),
                           usage=Usage(input_tokens=1000 + step, output_tokens=40)))
        out.append(Message.tool_result(call, RESULT))
        step += 1
    return out[:count]


def write(folder: Path, conversation: list[Message]) -> list[float]:
    """Write the session; returns the seconds each MessageAdded emit took."""
    writer = JsonlSessionWriter.create(folder, SessionMeta(id=folder.name, workspace="/bench"))
    writer.emit(TurnStarted(turn=1, prompt=conversation[0].content))
    costs = []
    for message in conversation:
        event = MessageAdded(message=message, turn=1)
        started = time.perf_counter()
        writer.emit(event)
        costs.append(time.perf_counter() - started)
    writer.close()
    return costs


def best_load(folder: Path, repeats: int) -> tuple[float, int, int]:
    """The best of `repeats` load+repair times, the file size and the message count."""
    best = float("inf")
    count = 0
    for _ in range(repeats):
        started = time.perf_counter()
        loaded = load_session(folder)
        repair_orphans(loaded.messages)
        best = min(best, time.perf_counter() - started)
        count = len(loaded.messages)
    return best, (folder / "transcript.jsonl").stat().st_size, count


def main() -> None:
    print(f"python {sys.version.split()[0]}")
    print(f"{'messages':>9} {'file MB':>8} {'write/msg µs (median, p99)':>27} {'load+repair s':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            folder = Path(tmp) / f"s{size}"
            conversation = messages(size)
            costs = sorted(write(folder, conversation))
            load, nbytes, count = best_load(folder, repeats=3 if size < 100_000 else 1)
            assert count == size, (count, size)
            median = statistics.median(costs) * 1e6
            p99 = costs[int(len(costs) * 0.99)] * 1e6
            print(f"{size:>9} {nbytes / 1e6:>8.1f} {median:>15.1f} {p99:>11.1f} {load:>14.3f}")


if __name__ == "__main__":
    main()
