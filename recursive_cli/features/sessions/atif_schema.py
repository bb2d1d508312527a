"""The ATIF document's shape (Harbor's RFC 0001, ATIF-v1.7): the part of it the export writes.

Our own models, not Harbor's (Harbor needs Python 3.12 and is the tests' oracle, not a
dependency); `extra="forbid"` everywhere, as Harbor's are, so a misspelt field fails here first.
"""

# (No `from __future__ import annotations`: pydantic would compile and evaluate every field's
# annotation from its text when the models are made at import; issue 16.)

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "ATIF-v1.7"  # subagent_trajectories with trajectory_id, llm_call_count


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class AtifImageSource(_Model):
    media_type: str
    path: str


class AtifContentPart(_Model):
    type: Literal["text", "image"]
    text: str | None = None
    source: AtifImageSource | None = None


Content = str | list[AtifContentPart]


class AtifToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class AtifSubagentRef(_Model):
    trajectory_id: str
    session_id: str | None = None


class AtifObservationResult(_Model):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[AtifSubagentRef] | None = None
    extra: dict[str, Any] | None = None


class AtifObservation(_Model):
    results: list[AtifObservationResult] = []


class AtifMetrics(_Model):
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] | None = None


class AtifStep(_Model):
    step_id: int
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    llm_call_count: int | None = None
    extra: dict[str, Any] | None = None


class AtifAgent(_Model):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Model):
    total_prompt_tokens: int
    total_completion_tokens: int
    total_cached_tokens: int
    total_cost_usd: float | None = None
    total_steps: int
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Model):
    schema_version: str = SCHEMA_VERSION
    session_id: str
    trajectory_id: str | None = None
    agent: AtifAgent
    steps: list[AtifStep]
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list["AtifTrajectory"] | None = None
