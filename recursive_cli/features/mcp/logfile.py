"""A server's log file: everything we write there on its behalf — its stderr (stdio.py), its
log notices and the lines of it we note (rpc.py), for every transport — goes through `append`,
which keeps the file at LOG_CAP bytes, restarts and resumes included (they append to the same
file). The write that reaches the cap is cut there and says so; later ones are dropped.
"""

from __future__ import annotations

import os
from typing import TextIO

LOG_CAP = 8 << 20  # bytes of one server's log file at most (a chatty server cannot fill the disk)


def append(log: TextIO, data: bytes) -> bool:
    """Append `data` to `log` within LOG_CAP; False once the log is full (nothing more is kept).
    (Written to the file descriptor at its size on disk: the cap holds across restarts.)"""
    try:
        log.flush()
        fd = log.fileno()
        room = LOG_CAP - os.fstat(fd).st_size
        if room < 0:
            return False
        if room:
            os.write(fd, data[:room])
        if room < len(data):
            os.write(fd, f"\n(the log is full at {LOG_CAP / (1 << 20):g} MiB: the server's stderr and "
                         "notices past it are not kept)\n".encode())
            return False
    except (OSError, ValueError):  # (closed, or the disk is full: the server's work goes on)
        return False
    return True
