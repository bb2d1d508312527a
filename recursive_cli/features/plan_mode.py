"""Plan mode: the agent reads and thinks, changes nothing, and ends with a plan (issue 33).

The permission policy's `plan` mode refuses every call that may change something
(features/permissions.py); this module adds the one tool offered only in that mode,
`exit_plan_mode` (Claude Code's `ExitPlanMode`), whose `plan` ends the turn as its answer,
and switches a runtime in and out of the mode (the chat's approval, the SDK's
`set_permission_mode`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from ..core.choices import PermissionMode
from ..core.runtime import RuntimeCore
from ..core.tool import BaseTool, ToolContext, ToolResult
from .permissions import PLAN_TOOL, PermissionPolicy

PRESENTED = ("The plan was shown to the user; this turn ends here. Do not carry it out until the "
             "user approves it and plan mode is off.")


class PlanState:
    """The plan the agent presented last (None: none since plan mode began)."""

    def __init__(self) -> None:
        self.plan: str | None = None


@dataclass(slots=True, kw_only=True)
class ExitPlanModeArgs:
    plan: Annotated[str, Meta(min_length=1, description="The plan, in Markdown: what you will change, "
                                                        "file by file, and how you will check it.")]


class ExitPlanModeTool(BaseTool[ExitPlanModeArgs]):
    name = PLAN_TOOL
    description = ("Present your plan to the user for approval and end the turn. Plan mode only: "
                   "call it once you have read enough to know what to change; the user approves "
                   "the plan or asks for another.")
    kind = "other"
    Args = ExitPlanModeArgs
    subject_field = None

    def __init__(self, state: PlanState) -> None:
        self.state = state

    async def run(self, args: ExitPlanModeArgs, ctx: ToolContext) -> ToolResult:
        self.state.plan = args.plan
        return ToolResult(PRESENTED, summary="plan presented", answer=args.plan)


def plan_state(runtime: RuntimeCore) -> PlanState:
    """The runtime's plan state, attached on first use."""
    found = runtime.feature(PlanState)
    if found is None:
        found = PlanState()
        runtime.attach(found)
    return found


def take_plan(runtime: RuntimeCore) -> str | None:
    """The plan presented since the last call (None: none), cleared."""
    state = plan_state(runtime)
    plan, state.plan = state.plan, None
    return plan


def planned(runtime: RuntimeCore) -> bool:
    """Whether the turn that just ended presented a plan in plan mode (the plan taken): a
    driver's run ends there, with the plan as its answer — carrying it out is the user's call."""
    policy = runtime.feature(PermissionPolicy)
    return policy is not None and policy.mode == "plan" and take_plan(runtime) is not None


def enter_plan_mode(runtime: RuntimeCore, policy: PermissionPolicy) -> None:
    """Plan mode from the next call on (`policy`: the runtime's): writes refused, `exit_plan_mode` offered."""
    policy.mode = "plan"
    plan_state(runtime).plan = None
    runtime.add_tool(ExitPlanModeTool(plan_state(runtime)))


def leave_plan_mode(runtime: RuntimeCore, policy: PermissionPolicy, mode: PermissionMode) -> None:
    """Switch to `mode` (the one the user chose when approving the plan)."""
    policy.mode = mode
    runtime.remove_tool(PLAN_TOOL)
    from .sessions.writer import JsonlSessionWriter

    writer = runtime.feature(JsonlSessionWriter)
    if writer is not None:  # (a later `resume` goes on in the mode chosen, not in plan mode)
        writer.update_meta(permission_mode=mode)

