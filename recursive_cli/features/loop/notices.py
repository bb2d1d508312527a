"""The loop's notices: a wakeup scheduled, a background job started and ended (core/events.py
says how a notice is declared and shown)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...core.events import Notice
from ...core.values import hidden


@dataclass(slots=True, kw_only=True, eq=False)
class WakeupScheduled(Notice):
    """The loop's agent asked to be woken up later with a prompt."""

    type: Literal["wakeup_scheduled"] = "wakeup_scheduled"

    delay_seconds: float
    due: str
    prompt: str
    reason: str
    shown: str = hidden("")

    def text(self) -> str:
        return self.shown


@dataclass(slots=True, kw_only=True, eq=False)
class BackgroundJobStarted(Notice):
    """The loop's agent started a background job."""

    type: Literal["background_job_started"] = "background_job_started"

    job_id: str
    command: str
    pid: int
    output_file: str
    timeout_seconds: float | None

    def text(self) -> str:
        return f"▶ {self.job_id} started: {self.command}"


@dataclass(slots=True, kw_only=True, eq=False)
class BackgroundJobFinished(Notice):
    """A background job ended (or was found dead on resume)."""

    type: Literal["background_job_finished"] = "background_job_finished"

    job_id: str
    command: str
    status: str
    exit_code: int | None
    duration_s: float
    output_file: str
    shown: str = hidden("")

    def text(self) -> str:
        return self.shown
