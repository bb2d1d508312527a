"""Whether a process is still there: for stale locks, orphaned servers and swept temp folders."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs; a zombie (ended, not reaped) counts as gone, and one owned by
    another user as running."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (IndexError, ValueError):
        return False
    except OSError:
        pass  # (no /proc here, or it just ended)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not os.path.isdir("/proc")  # (with /proc, its missing entry said it has gone)
