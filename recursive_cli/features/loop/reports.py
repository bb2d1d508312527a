"""What the loop tells the agent and the user about jobs and waits, as text."""

from __future__ import annotations

from .jobs import JobRecord, read_tail
from .wakeup import Wakeup, human_duration

TAIL_BYTES = 4_000  # of a job's output, in the prompt of the turn that reports it
STATUS_TAIL_BYTES = 2_000  # in a job_status answer


def ending(record: JobRecord) -> str:
    """How a job ended, in a few words: `exit code 0`, `killed by SIGKILL`, `timed out after 30 s`."""
    if record.status == "running":
        return f"running for {human_duration(record.duration())}"
    if record.status == "lost":
        return "lost"
    if record.status == "timed_out":
        return f"timed out after {record.timeout_seconds:g} s"
    if record.status == "stopped":
        return "stopped"
    code = record.exit_code
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


def output_section(record: JobRecord, limit: int) -> str:
    """The tail of a job's output in a fence, saying how much there is and where it all is."""
    tail, size = read_tail(record.output, limit)
    if size == 0:
        return "It wrote no output."
    shown = "all of its output" if size <= limit else f"the last {limit:,} of {size:,} bytes of its output"
    fence = "````" if "```" in tail else "```"
    return (f"Here is {shown} (stdout and stderr; the whole of it is in {record.output}):\n"
            f"{fence}\n{tail.rstrip()}\n{fence}")


def job_report(record: JobRecord) -> str:
    """The prompt of the turn that tells the agent a job ended."""
    name = f"Background job {record.id} (`{record.command}`)"
    if record.status == "lost":
        head = (f"{name} was lost: the recursive process that ran it stopped before the job "
                "finished, and the job was stopped with it. Run it again if you still need it.")
    elif record.status == "timed_out":
        head = (f"{name} timed out after {record.timeout_seconds:g} s; it and everything it "
                "started were killed.")
    else:
        head = (f"{name} finished with {ending(record)} after "
                f"{human_duration(record.duration())}.")
    return f"{head}\n\n{output_section(record, TAIL_BYTES)}"


def job_status_text(record: JobRecord) -> str:
    """The answer to `job_status`."""
    return (f"{record.id}: {ending(record)}\ncommand: {record.command}\n\n"
            f"{output_section(record, STATUS_TAIL_BYTES)}")


def waiting_text(wakeup: Wakeup | None, running: list[JobRecord]) -> str:
    """One line saying what the loop waits for."""
    parts = []
    if wakeup is not None:
        why = f": {wakeup.reason}" if wakeup.reason else ""
        parts.append(f"waking up at {wakeup.due_iso()}{why}")
    if running:
        names = ", ".join(f"{r.id} ({_short(r.command)})" for r in running[:3])
        more = f" and {len(running) - 3} more" if len(running) > 3 else ""
        parts.append(f"{len(running)} job{'s' if len(running) != 1 else ''} running: {names}{more}")
    return "waiting — " + " · ".join(parts)


def _short(text: str, limit: int = 40) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
