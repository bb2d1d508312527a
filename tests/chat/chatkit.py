"""The interactive session as a person drives it: `recursive` in a real pseudo-terminal
(pexpect), against the loopback fake model server.

The terminal answers prompt_toolkit's cursor-position requests, as a real one does, so the
input line is drawn as it is on a screen. Every wait is for text on the screen, never a sleep:
keys are typed once the screen shows the session is reading them (the input line, a question,
a turn's status line), so pexpect's pause before each send and after closing are turned off.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from clitools import require, wait_until

TIMEOUT = 20  # seconds for any one thing to appear (a loaded 2-core machine)
CPR_REQUEST = "\x1b[6n"
PROMPT = "›"
PASTE_ON = "\x1b[?2004h"  # prompt_toolkit's input line turns bracketed paste on as it starts
CTRL_C = "\x03"
CTRL_D = "\x04"
ALT_ENTER = "\x1b\r"


def plain(text: str) -> str:
    """Terminal output without its colour and cursor sequences and carriage returns."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


def call(name: str, **arguments: object) -> dict[str, Any]:
    """A tool call in a scripted reply."""
    return {"name": name, "arguments": arguments}


class Chat:
    """One `recursive ARGS` on a pseudo-terminal of 100 × 30."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        pexpect = require("pexpect")
        self.pexpect = pexpect
        self.child = pexpect.spawn(
            sys.executable, ["-m", "recursive_cli", *args], cwd=str(cwd), encoding="utf-8",
            codec_errors="replace", timeout=TIMEOUT, dimensions=(30, 100),
            env={**os.environ, "TERM": "xterm-256color", **(env or {})})
        self.child.delaybeforesend = None  # (pexpect's default: 0.05 s before every send)
        self.seen = ""  # everything the terminal received, for failure messages
        if os.environ.get("CHATKIT_LOG"):  # (debugging: the raw terminal output, appended to a file)
            self.child.logfile_read = open(os.environ["CHATKIT_LOG"], "a", encoding="utf-8", newline="")  # noqa: SIM115

    def expect(self, text: str, timeout: float = TIMEOUT) -> str:
        """Wait for `text` (plain, not a pattern) on the terminal; returns what came before it."""
        return self.expect_pattern(re.escape(text), timeout)

    def expect_pattern(self, pattern: str, timeout: float = TIMEOUT) -> str:
        before = ""
        while True:
            try:
                index = self.child.expect([pattern, re.escape(CPR_REQUEST)], timeout=timeout)
            except (self.pexpect.TIMEOUT, self.pexpect.EOF) as exc:
                tail = (self.seen + str(self.child.before))[-3000:]
                raise AssertionError(f"{pattern!r} did not appear ({type(exc).__name__}); the "
                                     f"terminal's last output:\n{tail!r}") from None
            before += self.child.before
            self.seen += self.child.before + str(self.child.after)
            if index == 0:
                return before
            self.child.send("\x1b[20;1R")  # the cursor's row and column, as a terminal answers

    def prompt(self) -> None:
        """Wait for the input line: drawn once the turn is over (after its checkpoint), and told
        from the status line under a running turn by the bracketed-paste switch it turns on."""
        self.expect_pattern(re.escape(PASTE_ON) + "[^" + PROMPT + "]*" + PROMPT)

    def say(self, text: str) -> None:
        """Type `text` and Enter."""
        self.child.send(text + "\r")

    def exchange(self, text: str, shown: str) -> str:
        """Type `text` and Enter, wait for `shown` and then the input line; what came before `shown`."""
        self.say(text)
        before = self.expect(shown)
        self.prompt()
        return before

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def leave(self) -> int:
        """Ctrl-D at the prompt; the exit code."""
        self.child.send(CTRL_D)
        return self.wait()

    def wait(self) -> int:
        """Wait for the process to end; its exit code."""
        self.expect_pattern(self.pexpect.EOF)  # type: ignore[arg-type]
        try:  # (the terminal is closed; the exit follows)
            wait_until(lambda: not self.child.isalive(), timeout=TIMEOUT)
        except AssertionError:
            raise AssertionError(f"the terminal closed but the process is still running; its last "
                                 f"output:\n{self.seen[-3000:]!r}") from None
        self.child.ptyproc.delayafterclose = 0  # (pexpect's default: 0.1 s, for a child still exiting)
        self.child.close()
        status = self.child.exitstatus
        return status if status is not None else 128 + (self.child.signalstatus or 0)

    def kill(self) -> None:
        if self.child.isalive():
            self.child.kill(9)


def server_args(server: Any, model: str = "gpt-4o-mini") -> list[str]:
    """Options that point the session at the fake server's OpenAI endpoint."""
    return ["--provider", "openai", "--api-base", server.openai_base_url, "-m", model]


def user_messages(body: dict[str, Any]) -> list[str]:
    """The user messages of a Chat Completions request, in order."""
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def sessions(home: Path) -> list[str]:
    """The ids of the sessions saved under `home`."""
    folder = home / "sessions"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
