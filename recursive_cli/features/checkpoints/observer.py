"""Snapshots around every turn, tool call and background job of a runtime.

The turns' snapshots are reported as `checkpoint` events; those around tool calls and jobs
(the windows that attribute changes to the session, see attribution.py) are not. A snapshot
that fails never ends the run: the first failure is shown, every one is recorded in the
session. With no git on the machine the run says so once and goes on without; so does a
run in a workspace over the limits (limits.py) or in a folder that is no project.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...core.errors import CheckpointsOff
from ...core.events import CheckpointFailed, CheckpointTaken, SkippedPath
from .calls import is_watched, written_paths
from .checkpointer import GitCheckpointer, Phase, Snapshot
from .git import find_git
from .limits import HOW, Limits, not_a_project

if TYPE_CHECKING:
    from ...core.kernel import TurnOutcome
    from ...core.messages import ToolCall
    from ...core.runtime import RuntimeCore
    from ...core.tool import Tool

T = TypeVar("T")

SHOWN_SKIPS = 20  # skipped paths listed in one checkpoint record
SHOWN_LINES = 5  # … and on the terminal
SLOW_SECONDS = 5.0  # a snapshot slower than this gets a hint


class CheckpointObserver:
    """The turn and tool observer that snapshots the workspace around each turn and each
    call that may change it."""

    def __init__(self, checkpointer: GitCheckpointer | None, off: str | None = None) -> None:
        self.checkpointer = checkpointer
        self.off = off  # why there are no checkpoints (with no checkpointer): shown once
        self._warned = False
        self._skips_shown: set[str] = set()
        self._before: dict[int, str] = {}  # turn → its "before" commit
        self._pending: Callable[[], Awaitable[None]] | None = None  # reports a "before" being taken

    async def before_turn(self, runtime: RuntimeCore, turn: int) -> None:
        """The turn's "before" snapshot. It overlaps the turn's first model call when nothing
        but the model runs before the first tool call (no prompt hooks): the model does not touch
        the workspace, and everything that could (a tool call, a background job, the "after"
        snapshot) or reads the snapshots (the checkpoint tools) waits for it first (`_settle`),
        and its `checkpoint` event is sent then, between the model's reply and what follows."""
        await self._settle()
        cp = self.checkpointer
        if cp is None or runtime.prompt_filters:
            await self._take(runtime, turn, "before")
            return
        taking = asyncio.ensure_future(asyncio.to_thread(self._snapshot, cp, turn, "before"))
        taking.add_done_callback(_retrieved)
        self._pending = functools.partial(self._take, runtime, turn, "before", taking)

    async def after_turn(self, runtime: RuntimeCore, turn: int, outcome: TurnOutcome) -> None:
        await self._settle()
        await self._take(runtime, turn, "after")

    async def _settle(self) -> None:
        """Wait for the "before" snapshot still being taken, if any, and report it."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending()

    @contextlib.asynccontextmanager
    async def around_tool(self, runtime: RuntimeCore, turn: int, call: ToolCall,
                          tool: Tool) -> AsyncIterator[None]:
        """A window around one tool call: what it changes is the session's own."""
        await self._settle()  # every tool: the checkpoint tools read the snapshots
        if self.checkpointer is None or not is_watched(tool):
            yield
            return
        paths = written_paths(tool.name, call.arguments_or_empty(), runtime.tool_context.sandbox)
        async with self._window(runtime, turn, tool.name, paths):
            yield

    def around_job(self, runtime: RuntimeCore,
                   command: str) -> contextlib.AbstractAsyncContextManager[None]:
        """A window from a background job's start to its end, owned by the turn that started it."""
        if self.checkpointer is None:
            return contextlib.nullcontext()
        return self._window(runtime, runtime.turn_index(), "run_background", None)

    @contextlib.asynccontextmanager
    async def _window(self, runtime: RuntimeCore, turn: int, label: str,
                      paths: list[str] | None) -> AsyncIterator[None]:
        cp = self.checkpointer
        assert cp is not None
        await self._settle()
        # A window that changes nothing is mostly done here at once (no git, no thread: see
        # open_quietly); anything else runs in a thread.
        window = _quietly(lambda: cp.open_quietly(turn, label))
        if window is None:
            window = await self._guarded(runtime, turn, label, lambda: cp.open_window(turn, label))
        try:
            yield
        finally:  # an interrupted call too: what it did before it was stopped is ours
            if window is not None and not _quietly(functools.partial(cp.close_quietly, window)):
                close = functools.partial(cp.close_window, window, paths)
                await self._guarded(runtime, turn, label, close)

    async def _guarded(self, runtime: RuntimeCore, turn: int, label: str,
                       work: Callable[[], T]) -> T | None:
        """`work` in a thread; a failure is reported (once) and never reaches the tool call."""
        try:
            return await asyncio.to_thread(work)
        except CheckpointsOff as exc:
            self._turn_off(runtime, str(exc))
            return None
        except Exception as exc:  # a snapshot must never end the run
            failed = CheckpointFailed(turn=turn, phase="tool", tool=label, error=str(exc))
            self._warn_once(runtime, failed,
                            f"warning: checkpoint around {label} in turn {turn} failed: {exc}; "
                            "the run goes on")
            return None

    async def _take(self, runtime: RuntimeCore, turn: int, phase: Phase,
                    taking: Awaitable[tuple[Snapshot, float]] | None = None) -> None:
        """Take a snapshot (or wait for `taking`, one already begun) and report it."""
        if self.checkpointer is None:
            if self.off is not None:
                self._turn_off(runtime, self.off)
                return
            self._warn_once(runtime, CheckpointFailed(enabled=False, error="git not found"),
                            "warning: git is not installed: running without checkpoints")
            return
        try:
            snap, took = await (taking if taking is not None
                          else asyncio.to_thread(self._snapshot, self.checkpointer, turn, phase))
        except CheckpointsOff as exc:
            self._turn_off(runtime, str(exc))
            return
        except Exception as exc:  # a snapshot must never end the run
            self._warn_once(runtime, CheckpointFailed(turn=turn, phase=phase, error=str(exc)),
                            f"warning: checkpoint {phase} turn {turn} failed: {exc}; the run goes on")
            return
        text = self._text(runtime.session_id, turn, phase, snap)
        if took > SLOW_SECONDS:
            text += (f"\ncheckpoint: the snapshot took {took:.1f} s; add big generated folders to "
                     ".gitignore, or pass --no-checkpoints")
        runtime.emit(_taken(turn, phase, snap, text.strip()))

    def _snapshot(self, cp: GitCheckpointer, turn: int, phase: Phase) -> tuple[Snapshot, float]:
        """The snapshot and the seconds it took (timed here, in its thread: a "before" snapshot
        runs beside the model call, whose time is not the snapshot's)."""
        started = time.monotonic()
        snap = self._counted(cp, turn, phase)
        return snap, time.monotonic() - started

    def _counted(self, cp: GitCheckpointer, turn: int, phase: Phase) -> Snapshot:
        """The snapshot; after a turn, `files_changed` counts the session's own changes only."""
        snap = cp.snapshot(turn, phase)
        if phase == "before":
            self._before[turn] = snap.commit
            return snap
        before = self._before.pop(turn, None)
        if before is not None and snap.parent == before:  # nothing between: no call's window to read
            return snap._replace(files_changed=0)
        own = cp.history(since=before, now=snap.tree).own({turn})
        return snap._replace(files_changed=len(own))

    def _turn_off(self, runtime: RuntimeCore, why: str) -> None:
        """No more snapshots this session, because `why`: said once (a `checkpoint` notice,
        `enabled: false`), and every later turn and tool call goes without."""
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.checkpointer, self.off = None, why
        if self._warned:
            return
        how = HOW if "files" in why else "run in a project folder, or pass --no-checkpoints to silence this"
        self._warn_once(runtime, CheckpointFailed(enabled=False, error=f"checkpoints off: {why}"),
                        f"checkpoint: off for this session: {why}; {how}")

    def _warn_once(self, runtime: RuntimeCore, failed: CheckpointFailed, text: str) -> None:
        runtime.emit(replace(failed, shown="" if self._warned else text))
        self._warned = True

    def _text(self, session_id: str, turn: int, phase: Phase, snap: Snapshot) -> str:
        """A terminal line when there is something to say: new skips, or what the turn changed."""
        new = [skip for skip in snap.skipped if skip.path not in self._skips_shown]
        self._skips_shown.update(skip.path for skip in new)
        lines = [f"checkpoint: not snapshotted: {skip.describe()}" for skip in new[:SHOWN_LINES]]
        if len(new) > SHOWN_LINES:
            lines.append(f"checkpoint: … and {len(new) - SHOWN_LINES} more not snapshotted")
        if phase == "after" and snap.files_changed:
            lines.append(f"checkpoint: turn {turn} changed {_files(snap.files_changed)} "
                         f"(undo: recursive checkpoints restore {session_id} --turn {turn})")
        return "\n".join(lines)


def _retrieved(future: asyncio.Future[tuple[Snapshot, float]]) -> None:
    """Mark a snapshot's failure as seen: a run that ends before reporting it (an error
    elsewhere) leaves no "exception was never retrieved" behind."""
    if not future.cancelled():
        future.exception()


def _quietly(work: Callable[[], T]) -> T | None:
    """`work`'s answer; None when it fails (the thread path then does it again, and reports)."""
    try:
        return work()
    except Exception:
        return None



def _taken(turn: int, phase: Phase, snap: Snapshot, shown: str) -> CheckpointTaken:
    """The `checkpoint` event of a snapshot (the first SHOWN_SKIPS skipped paths listed)."""
    skipped = [SkippedPath(path=s.path, reason=s.reason) for s in snap.skipped[:SHOWN_SKIPS]]
    return CheckpointTaken(turn=turn, phase=phase, commit=snap.commit, files_changed=snap.files_changed,
                           skipped=skipped or None, skipped_count=len(snap.skipped) or None,
                           shown=shown)


def _files(count: int) -> str:
    return f"{count} file" + ("" if count == 1 else "s")


def prepared_checkpointer(home: Path, workspace: Path, session_id: str,
                          new_session: bool = False) -> GitCheckpointer | None:
    """The checkpointer of `session_id` in `workspace`, its first snapshot's work begun
    (`GitCheckpointer.prepare`), for `attach_checkpoints` to take later: a launch makes it
    before its runtime, so that git works beside the rest of the start-up. None when there
    will be no checkpoints (git missing, no project folder: attaching says so). `new_session`:
    the id was just made (see GitCheckpointer)."""
    git = find_git()
    if git is None or not_a_project(workspace) is not None:
        return None
    checkpointer = GitCheckpointer(home, workspace, session_id, git_executable=git, limits=Limits.from_env(),
                                   new_session=new_session)
    checkpointer.prepare()
    return checkpointer


def attach_checkpoints(runtime: RuntimeCore, home: Path, session_id: str | None = None,
                       prepared: GitCheckpointer | None = None) -> GitCheckpointer | None:
    """Snapshot `runtime`'s workspace around every turn, every tool call that may change it
    and every background job, and give the agent its checkpoint tools (`prepared`: the
    checkpointer `prepared_checkpointer` made for them, when it is the same workspace and session).

    Returns the checkpointer, or None when git is missing or the workspace is no project
    folder (limits.py): the first turn then says so. A workspace over the limits is found
    out by the first snapshot, which says so and turns checkpoints off for the session.
    """
    from .tools import checkpoint_tools

    off = not_a_project(runtime.workspace)
    session_id = session_id or runtime.session_id
    checkpointer = prepared
    if prepared is not None and (prepared.workspace, prepared.session_id) != (runtime.workspace.resolve(), session_id):
        prepared.close()
        checkpointer = None
    if checkpointer is None:
        from ..sessions.ids import new_session_id

        checkpointer = prepared_checkpointer(home, runtime.workspace, session_id or new_session_id(),
                                             new_session=not session_id)
    if checkpointer is not None:
        for tool in checkpoint_tools(checkpointer):
            runtime.add_tool(tool)
    observer = CheckpointObserver(checkpointer, off)
    runtime.add_turn_observer(observer)
    runtime.add_tool_observer(observer)
    if "recursive_cli.features.loop.control" in sys.modules:  # else no loop can be attached
        from ..loop.control import LoopControl

        loop = runtime.feature(LoopControl)
        if loop is not None and loop.jobs is not None:
            loop.jobs.around_job = functools.partial(observer.around_job, runtime)
    return checkpointer
