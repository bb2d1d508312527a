"""Goal checks: shell commands run in the workspace after each turn; exit 0 means the check holds.

Each check runs like `run_shell` does — bash in the workspace, in its own process group,
API keys hidden — so a timeout or Ctrl-C kills everything it started. Only the end of its
output is kept: that is where test runners and compilers put their verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.event_models import CheckResult
from ..core.tool import ToolContext
from ..tools.shell import HeadTailBuffer, run_command

OUTPUT_TAIL_BYTES = 4096
DEFAULT_CHECK_TIMEOUT = 600.0


async def run_checks(commands: Sequence[str], ctx: ToolContext, timeout: float) -> list[CheckResult]:
    """Run every check in order (all of them, so the agent hears about every failure)."""
    return [await run_check(command, ctx, timeout) for command in commands]


async def run_check(command: str, ctx: ToolContext, timeout: float) -> CheckResult:
    """Run one check; its process group is registered so an interrupt kills it at once."""
    buffer = HeadTailBuffer(OUTPUT_TAIL_BYTES)
    try:
        run = await run_command(command, ctx, buffer, timeout)
    except OSError as exc:
        return CheckResult(command=command, exit_code=127, output_tail=f"cannot start the shell: {exc}")
    return CheckResult(command=command, exit_code=None if run.timed_out else run.returncode,
                       timed_out=run.timed_out, duration_s=round(run.elapsed, 3),
                       output_tail=_tail(buffer))


def _tail(buffer: HeadTailBuffer) -> str:
    """The last OUTPUT_TAIL_BYTES of the output, marked when earlier output was left out.

    Once anything was dropped the buffer's tail holds at least `half` bytes, so head + tail
    ends with the true last bytes either way.
    """
    kept = bytes(buffer.head + buffer.tail)[-buffer.half:]
    text = kept.decode("utf-8", "replace").strip("\n")
    if buffer.total > len(kept):
        return f"… [{buffer.total - len(kept)} earlier bytes left out]\n{text}"
    return text
