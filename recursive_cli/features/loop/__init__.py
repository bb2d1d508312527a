"""Autonomous loops (SPEC §6): the wakeup slot, background jobs, the loop tools and the driver.

    control.py   LoopControl: slot + jobs + stop request, saved in the session as they change
    wakeup.py    WakeupSlot: the one pending wakeup
    jobs.py      BackgroundJobManager: jobs in their own process groups, output to files
    tools.py     schedule_wakeup, run_background, job_status, job_stop, stop_loop
    driver.py    EventLoop: turns over `AgentRuntime.run`, then wakeups and finished jobs
    reports.py   what the agent and the user are told about jobs and waits
"""

from .control import LoopControl, LoopState
from .jobs import BackgroundJobManager, JobRecord
from .wakeup import Wakeup, WakeupSlot

__all__ = ["BackgroundJobManager", "JobRecord", "LoopControl", "LoopState", "Wakeup", "WakeupSlot"]
