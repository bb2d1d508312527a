"""How long `recursive chat` takes to open: spawn → the input line on the screen, and Ctrl-D →
exit, on a real pseudo-terminal (100 × 30), next to `recursive --version` and a one-step
`recursive run` (the same command line, no terminal) as floors.

The terminal answers prompt_toolkit's cursor-position request, as a real one does. The chat
uses the scripted provider (no server: the first request is never made), a throwaway home
and workspace, bytecode cached as an installed package has it (harness.child_env). Medians
and minimums over `--runs` runs after one warm-up; CPU is the child's user+sys (`wait4`).

    python bench/chat_start.py [--runs 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time
from pathlib import Path

from harness import RECURSIVE, agent_env, machine, median, run_child, scratch_dir, table, write_json

PASTE_ON = b"\x1b[?2004h"  # prompt_toolkit turns bracketed paste on as it draws the input line
PROMPT = "›".encode()
CPR_REQUEST = b"\x1b[6n"


def chat_once(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    """One chat on a new pty: seconds to the prompt, seconds from Ctrl-D to the exit, CPU."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: the pty as its controlling terminal and its stdio
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.close(master)
        try:
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)  # (exec failed: never run the parent's code in the child)
    os.close(slave)
    seen = b""
    prompt_at = left_at = 0.0
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                raise RuntimeError(f"nothing on the terminal for 30 s: {seen[-500:]!r}")
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            seen += data
            if CPR_REQUEST in data:
                os.write(master, b"\x1b[20;1R")
            if not prompt_at and PASTE_ON in seen and PROMPT in seen[seen.index(PASTE_ON):]:
                prompt_at = time.perf_counter()
                os.write(master, b"\x04")  # Ctrl-D: leave
                left_at = time.perf_counter()
        _, status, usage = os.wait4(pid, 0)
    finally:
        os.close(master)
    ended = time.perf_counter()
    if not prompt_at or os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the chat did not open and leave cleanly: {seen[-500:]!r}")
    return {"prompt": prompt_at - started, "exit": ended - left_at, "cpu": usage.ru_utime + usage.ru_stime}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", default=None)
    options = parser.parse_args()
    home, workspace = scratch_dir("home"), scratch_dir("ws")
    script = Path(scratch_dir("script")) / "s.json"
    script.write_text(json.dumps([{"text": "done"}]), encoding="utf-8")
    env = {**agent_env(home), "TERM": "xterm-256color"}
    common = ["--provider", "scripted", "--script", str(script)]
    chat_argv = [RECURSIVE, "chat", *common]

    chat_once(chat_argv, env, workspace)  # warm-up (file cache, bytecode)
    chats = [chat_once(chat_argv, env, workspace) for _ in range(options.runs)]
    floors = {"recursive --version": [RECURSIVE, "--version"],
              "recursive run (1 step, piped)": [RECURSIVE, "run", "hi", "-C", workspace, *common]}
    floor_runs = {}
    for label, argv in floors.items():
        run_child(argv, env=env)
        floor_runs[label] = [run_child(argv, env=env) for _ in range(options.runs)]

    rows = [["recursive chat: spawn → input line", median([c["prompt"] for c in chats]),
             min(c["prompt"] for c in chats), median([c["cpu"] for c in chats])],
            ["recursive chat: Ctrl-D → exit", median([c["exit"] for c in chats]),
             min(c["exit"] for c in chats), ""]]
    rows += [[label, median([r.wall for r in runs]), min(r.wall for r in runs), median([r.cpu for r in runs])]
             for label, runs in floor_runs.items()]
    print(table(["what", "median s", "min s", "CPU s (whole process)"], rows))
    write_json(options.json, {"machine": machine(), "runs": options.runs, "chat": chats,
                              "floors": {k: [r.wall for r in v] for k, v in floor_runs.items()}})
    sys.stdout.flush()


if __name__ == "__main__":
    main()
