"""Conversations for the oracle tests: what a coding session sends, in every shape the wire
forms have a branch for."""

from __future__ import annotations

import json
import random

from recursive_cli.core.messages import Message, ToolCall, Usage
from recursive_cli.core.provider import ToolSpec

KEY = "sk-oracle-0123456789abcdef"
TOOLS = [
    ToolSpec("run_shell", "Run a shell command.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec("read_file", "Read a file — any file.",
             {"type": "object", "properties": {"path": {"type": "string", "description": "relative"},
                                               "limit": {"type": "integer", "minimum": 1}},
              "required": ["path"], "additionalProperties": False}),
]
ARGUMENTS = ['{"path": "src/a.py"}', '{"command": "ls -la | head"}', "{not json", '["a list"]', "",
             json.dumps({"path": "ünï/cödé ✓.py", "limit": 3}), '{"command": "echo \\"quoted\\"\\n"}']
TEXTS = ["", "", "Let me look.", "  ", "Running the tests ☕", "line one\nline two\ttabbed", "😀 emoji"]
RESULTS = ["ok", "", "line 1\nline 2\t\"quoted\"", "é" * 30, "\\ backslash \u2028 separator", "null"]


def conversation(seed: int, steps: int = 25) -> list[Message]:
    """A session of `steps` steps: prompts, replies with and without text, single and parallel
    tool calls (valid, invalid and non-object arguments), error results, a second system
    message, runs of user messages, non-ASCII text and characters JSON escapes."""
    rng = random.Random(seed)
    out = [Message.system("You are a coding agent. Ünïcode ✓"), Message.user("fix the tests")]
    for step in range(steps):
        roll = rng.random()
        if roll < 0.1:
            out.append(Message.user(f"also check module {step} — please"))
            continue
        if roll < 0.13:
            out.append(Message.system("Project instructions: keep it short."))
            continue
        if roll < 0.2:
            out.append(Message(role="assistant", content=rng.choice(TEXTS) or "done"))
            continue
        calls = tuple(ToolCall(id=f"toolu_{step}_{i}", name=rng.choice(["read_file", "run_shell"]),
                               arguments=rng.choice(ARGUMENTS))
                      for i in range(1 if rng.random() < 0.7 else rng.randint(2, 3)))
        out.append(Message(role="assistant", content=rng.choice(TEXTS), tool_calls=calls,
                           usage=Usage(input_tokens=100 + step, output_tokens=7)))
        out += [Message.tool_result(call, rng.choice(RESULTS), is_error=rng.random() < 0.2) for call in calls]
    return out
