"""The permission question of the interactive session on a real pseudo-terminal: a key typed
before the question shows cannot answer it, a key typed the moment it shows does, and keys
dropped after the event loop saw them never leave it stuck in a read."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import termios
import threading
import tty
from collections.abc import Iterator

import pytest
from clitools import wait_until

from recursive_cli.surfaces.chat.typeahead import TypeAhead


def pending(fd: int) -> int:
    """How many typed bytes the terminal holds, not read yet."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """(master, slave) of a new pseudo-terminal: the person's side, the session's side."""
    master, slave = pty.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def type_keys(master: int, slave: int, keys: bytes) -> None:
    """Type `keys` and wait until the terminal holds them (not read yet)."""
    before = pending(slave)
    os.write(master, keys)
    wait_until(lambda: pending(slave) >= before + len(keys), timeout=10)


class Screen:
    """Where the question is written; a person who types `key` as soon as it is on it."""

    def __init__(self, master: int, slave: int, key: bytes) -> None:
        self.master, self.slave, self.key, self.text = master, slave, key, ""

    def write(self, text: str) -> int:
        self.text += text
        type_keys(self.master, self.slave, self.key)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_key_typed_as_the_question_shows_answers_it_one_typed_before_does_not(
        terminal: tuple[int, int]) -> None:
    master, slave = terminal
    typed: list[str] = []

    async def ask() -> tuple[str, str, str]:
        keys = TypeAhead(slave, typed.append, lambda: None)
        with keys.capturing():
            type_keys(master, slave, b"n")  # typed before the question, not read yet
            screen = Screen(master, slave, b"y")
            # (no answer within 10 s: Ctrl-D, which answers "n")
            give_up = asyncio.get_running_loop().call_later(10, os.write, master, b"\x04")
            answer = await keys.answer("Allow it? ", screen, "yna", on_end="n")
            give_up.cancel()
        return answer, screen.text, keys.text

    answer, shown, left = asyncio.run(ask())
    assert shown == "Allow it? "
    assert answer == "y"
    assert left == "" and typed == []  # the early "n" was dropped, not queued as a message


def test_keys_dropped_after_the_loop_saw_them_do_not_block_it(terminal: tuple[int, int]) -> None:
    # The loop saw keys waiting, then a question dropped them before their reader ran: the
    # reader then finds nothing, and must not sit in a read until the next key.
    master, slave = terminal
    keys = TypeAhead(slave, lambda line: None, lambda: None)
    tty.setcbreak(slave)  # keys one by one, as while a turn runs
    type_keys(master, slave, b"abc")
    termios.tcflush(slave, termios.TCIFLUSH)
    returned = threading.Event()
    reader = threading.Thread(target=lambda: (keys._readable(), returned.set()), daemon=True)
    reader.start()
    came_back = returned.wait(10)
    os.write(master, b"x")  # (lets a read that waits return)
    reader.join(10)
    assert came_back, "the reader waited in a read with nothing typed"
    assert keys.text == ""


def test_esc_alone_stops_the_turn_and_an_arrow_key_does_not() -> None:
    stops: list[str] = []
    lines: list[str] = []
    keys = TypeAhead(-1, lines.append, lambda: None, lambda: stops.append("esc"))
    keys.feed("\x1b[A")  # Up: an escape sequence in one read
    keys.feed("ab\x1bc")  # Alt-c inside a read of text
    assert stops == [] and keys.text == "ab"
    keys.feed("\x1b")  # Esc alone
    assert stops == ["esc"] and keys.text == "ab"
