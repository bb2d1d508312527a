"""`sessions export --format atif`: a session as an Agent Trajectory Interchange Format document.

ATIF is the trajectory format Harbor reads (its RFC 0001; Harbor's pydantic models are the
tests' oracle). One step per message: the user's prompts are `user` steps, each model reply
an `agent` step (one LLM call, its tokens and cost as `metrics`) carrying its tool calls,
and the results of those calls are that step's `observation`. A goal run's evaluations (the
checks and the judge's verdict) and compactions (the summary that replaced older turns) are
`system` steps. A sub-conversation (a subagent run by a tool call) is an embedded trajectory
of its own in `subagent_trajectories`, referenced from the result of the call that ran it. What ATIF has no field for (turns, finish reasons, the
final answer, cache writes) goes in `extra`.
"""

# (No `from __future__ import annotations`: pydantic would compile and evaluate every field's
# annotation from its text when the models are made at import; issue 16.)

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal, NamedTuple

from ...core.messages import Image, Message, ToolCall, Usage
from ...core.pricing import cost_usd
from ...core.values import parse
from .atif_schema import (
    AtifAgent,
    AtifContentPart,
    AtifFinalMetrics,
    AtifImageSource,
    AtifMetrics,
    AtifObservation,
    AtifObservationResult,
    AtifStep,
    AtifSubagentRef,
    AtifToolCall,
    AtifTrajectory,
    Content,
)
from .reader import LoadedSession, rewound_turns
from .records import ExtraRecord, MessageRecord, RepairRecord, TranscriptRecord

AGENT_NAME = "recursive"
ATIF_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
PARENT_FIELDS = ("parent_tool_use_id", "parent_tool_call_id")  # a sub-conversation's link


class _Entry(NamedTuple):
    """One message of one conversation, as the exporter walks the transcript."""

    parent: str | None  # the tool call whose sub-conversation it belongs to (None: the session's)
    turn: int
    time: str
    message: Message | None  # None for a repair
    repair: RepairRecord | None = None
    model: str = ""  # a sub-conversation's model, when its record says


def export_atif(loaded: LoadedSession, agent_version: str = "unknown") -> str:
    """The session as one ATIF JSON document (indented), subagents embedded; `agent_version` is
    recursive's (the package's own, given by the command: features sit below the package root)."""
    trajectory = build_trajectory(loaded, agent_version)
    return trajectory.model_dump_json(indent=2, exclude_none=True) + "\n"


def build_trajectory(loaded: LoadedSession, agent_version: str = "unknown") -> AtifTrajectory:
    """The session's ATIF trajectory."""
    meta = loaded.meta
    builder = _StepBuilder(meta.model, rewound_turns(loaded.records))
    for record in loaded.records:
        builder.add_record(record)
    steps = builder.finish(placeholder=f"session {meta.id} has no messages yet")
    subagents = _subagent_trajectories(meta.id, meta.model, loaded.records, agent_version, builder)
    usage = meta.usage
    return AtifTrajectory(
        session_id=meta.id,
        trajectory_id=meta.id,
        agent=AtifAgent(name=AGENT_NAME, version=agent_version, model_name=meta.model or None,
                        extra={"provider": meta.provider, "mode": meta.mode}),
        steps=steps,
        final_metrics=AtifFinalMetrics(
            total_prompt_tokens=usage.input_tokens, total_completion_tokens=usage.output_tokens,
            total_cached_tokens=usage.cache_read_tokens, total_cost_usd=meta.cost_usd,
            total_steps=len(steps),
            extra=_drop_none({"cache_write_tokens": usage.cache_write_tokens,
                              "reasoning_tokens": usage.reasoning_tokens,
                              "llm_calls": meta.steps, "turns": meta.turns,
                              "judge_requests": _judge_requests(meta.state)})),
        notes=("total token counts and cost include the goal judge's requests and subagents; "
               "steps' metrics cover the agent's own model calls; a goal evaluation step has "
               "its judge's in extra.judge_metrics (when the session recorded them)"),
        extra=_drop_none({"workspace": meta.workspace, "status": meta.status,
                          "finish_reason": meta.finish_reason, "exit_code": meta.exit_code,
                          "created": meta.created, "updated": meta.updated, "title": meta.title,
                          "final_answer": builder.final_answer}),
        subagent_trajectories=subagents or None,
    )


def _entries(records: Iterable[TranscriptRecord]) -> Iterator[_Entry]:
    """The messages of sub-conversations, with the tool call each belongs to."""
    for record in records:
        if isinstance(record, MessageRecord) and record.message.role != "system":
            if (parent := _parent_of(record)) is not None:
                yield _Entry(parent, record.turn, record.time, record.message)
        elif isinstance(record, ExtraRecord) and (parent := _parent_of(record)) is not None:
            fields = record.fields()
            raw = fields.get("message")
            if isinstance(raw, dict):  # a sub-conversation's message written as a record of its own
                try:
                    message = parse(Message, raw)
                except ValueError:
                    continue
                yield _Entry(parent, _int(fields.get("turn")), str(fields.get("time", "")), message,
                             model=str(fields.get("model") or ""))


def _parent_of(record: TranscriptRecord) -> str | None:
    """The tool call a record's sub-conversation hangs from, whichever name the record uses."""
    fields = record.fields() if isinstance(record, ExtraRecord) else _fields_of(record)
    for name in PARENT_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and value:
            return value
    return None


class _StepBuilder:
    """Steps of one conversation, built message by message; tool results join their call's step."""

    def __init__(self, model: str, rewound: set[int]) -> None:
        self.model = model
        self.rewound = rewound
        self.steps: list[AtifStep] = []
        self.final_answer: str | None = None
        self._by_call: dict[str, tuple[AtifStep, ToolCall]] = {}
        self._results: dict[str, AtifObservationResult] = {}

    def add_record(self, record: TranscriptRecord) -> None:
        """Add the session-level record: its message, repair or goal evaluation."""
        if isinstance(record, MessageRecord) and record.message.role != "system":
            if _parent_of(record) is None:
                self.add(_Entry(None, record.turn, record.time, record.message))
        elif isinstance(record, RepairRecord):
            self.add(_Entry(None, record.turn, record.time, None, record))
        elif isinstance(record, ExtraRecord) and record.type == "goal_evaluation":
            self._goal_step(record)
        elif isinstance(record, ExtraRecord) and record.type == "compaction":
            self._compaction_step(record)

    def add(self, entry: _Entry) -> None:
        if entry.repair is not None:
            self._result(entry.repair.tool_call_id, entry.repair.content, entry.turn,
                         is_error=True, repaired=True)
            return
        message = entry.message
        assert message is not None
        if message.role == "tool":
            self._result(message.tool_call_id or "", message.content, entry.turn,
                         is_error=message.is_error, images=message.images or ())
        elif message.role == "user":
            self._append("user", _content(message.content, message.images or ()), entry)
        else:
            self._agent_step(message, entry)

    def _agent_step(self, message: Message, entry: _Entry) -> None:
        reasoning = "\n\n".join(part.text for part in message.reasoning or () if part.text) or None
        calls = [AtifToolCall(tool_call_id=call.id, function_name=call.name,
                              arguments=_arguments(call)) for call in message.tool_calls]
        step = self._append("agent", message.content, entry, reasoning_content=reasoning,
                            tool_calls=calls or None, llm_call_count=1,
                            metrics=_metrics(self.model, message.usage))
        for call in message.tool_calls:
            self._by_call[call.id] = (step, call)
        if message.content and not message.tool_calls:
            self.final_answer = message.content

    def _goal_step(self, record: ExtraRecord) -> None:
        fields = record.fields()
        results = [AtifObservationResult(content=str(check.get("output_tail", "")),
                                         extra=_drop_none({"check": check.get("command"),
                                                           "exit_code": check.get("exit_code"),
                                                           "passed": check.get("passed"),
                                                           "timed_out": check.get("timed_out"),
                                                           "duration_s": check.get("duration_s")}))
                   for check in fields.get("checks") or () if isinstance(check, dict)]
        judge = fields.get("judge")
        metrics, calls = None, None
        if isinstance(judge, dict):
            results.append(AtifObservationResult(
                content=str(judge.get("reason", "")),
                extra=_drop_none({"goal_judge": True, "model": judge.get("model"),
                                  "achieved": judge.get("achieved"), "valid": judge.get("valid")})))
            metrics, calls = _judge_metrics(judge)
        word = "met" if fields.get("achieved") else "not met"
        text = (f"goal {word} after turn {fields.get('turn')}/{fields.get('max_turns')}: "
                f"{fields.get('reason', '')}")
        entry = _Entry(None, _int(fields.get("session_turn")), str(fields.get("time", "")), None)
        # (ATIF allows `metrics` on agent steps only: the judge's are under `extra` in their shape)
        self._append("system", text, entry, observation=AtifObservation(results=results), llm_call_count=calls,
                     extra_fields=_drop_none({"goal_evaluation": True, "achieved": fields.get("achieved"),
                                              "judge_metrics": metrics and metrics.model_dump(exclude_none=True)}))

    def _compaction_step(self, record: ExtraRecord) -> None:
        """The older turns were summarised (features/compaction): the model sees the summary
        in their place from here on."""
        fields = record.fields()
        counts = {name: fields.get(name) for name in ("replaced", "kept", "tokens_before", "tokens_after")}
        entry = _Entry(None, _int(fields.get("turn")), str(fields.get("time", "")), None)
        self._append("system", f"conversation compacted; the summary that replaces the "
                     f"{fields.get('replaced', '?')} earlier messages:\n{fields.get('summary', '')}",
                     entry, extra_fields={"compaction": True, **_drop_none(counts)})

    def _append(self, source: Literal["system", "user", "agent"], content: Content, entry: _Entry,
                extra_fields: dict[str, Any] | None = None, **fields: Any) -> AtifStep:
        extra: dict[str, Any] = {"turn": entry.turn, **(extra_fields or {})}
        if entry.turn in self.rewound:
            extra["rewound"] = True  # taken back by `checkpoints restore`: no longer in the conversation
        step = AtifStep(step_id=len(self.steps) + 1, timestamp=entry.time or None, source=source,
                        message=content, extra=extra, **fields)
        self.steps.append(step)
        return step

    def _result(self, call_id: str, text: str, turn: int, is_error: bool, repaired: bool = False,
                images: Iterable[Image] = ()) -> None:
        found = self._by_call.get(call_id)
        extra = _drop_none({"tool_name": found[1].name if found else None,
                            "is_error": is_error or None, "repaired": repaired or None})
        result = AtifObservationResult(source_call_id=call_id if found else None,
                                       content=_content(text, images), extra=extra or None)
        self._results[call_id] = result
        if found is None:  # a result whose call is not in this conversation: a step of its own
            self._append("system", f"tool result for call {call_id}", _Entry(None, turn, "", None),
                         observation=AtifObservation(results=[result]))
            return
        step = found[0]
        if step.observation is None:
            step.observation = AtifObservation()
        step.observation.results.append(result)

    def has_call(self, call_id: str) -> bool:
        return call_id in self._by_call

    def turn_of_call(self, call_id: str) -> int:
        """The turn of the step that made the call."""
        return _int((self._by_call[call_id][0].extra or {}).get("turn"))

    def link(self, call_id: str, trajectory_id: str, session_id: str) -> None:
        """Point the result of `call_id` at the subagent trajectory it ran."""
        result = self._results.get(call_id)
        if result is None and call_id in self._by_call:  # the sub-conversation has no result yet
            self._result(call_id, "", 0, is_error=False)
            result = self._results[call_id]
        if result is not None:
            result.subagent_trajectory_ref = [AtifSubagentRef(trajectory_id=trajectory_id,
                                                              session_id=session_id)]

    def finish(self, placeholder: str) -> list[AtifStep]:
        """The steps; ATIF needs one at least, so an empty conversation gets a system step."""
        if not self.steps:
            self._append("system", placeholder, _Entry(None, 0, "", None))
        return self.steps


def _subagent_trajectories(session_id: str, model: str, records: list[TranscriptRecord],
                           version: str, root: _StepBuilder) -> list[AtifTrajectory]:
    """One embedded trajectory per sub-conversation, each linked from the call that ran it; its
    `task_started` and `task_notification` records (features/subagents) say what it was and how
    it ended."""
    groups: dict[str, list[_Entry]] = {}
    for entry in _entries(records):
        groups.setdefault(entry.parent or "", []).append(entry)
    started, ended = _task_records(records, "task_started"), _task_records(records, "task_notification")
    builders = [root]
    trajectories: list[AtifTrajectory] = []
    for call_id, group in groups.items():
        owner = next((b for b in builders if b.has_call(call_id)), None)
        turn = owner.turn_of_call(call_id) if owner is not None else 0
        task, end = started.get(call_id, {}), ended.get(call_id, {})
        sub_model = str(task.get("model") or group[0].model or model)
        builder = _StepBuilder(sub_model, root.rewound)
        for entry in group:
            builder.add(entry._replace(turn=entry.turn or turn))
        trajectory_id = f"{session_id}/{call_id}"
        steps = builder.finish(placeholder=f"subagent of tool call {call_id}")
        trajectories.append(AtifTrajectory(
            session_id=session_id, trajectory_id=trajectory_id,
            agent=AtifAgent(name=AGENT_NAME, version=version, model_name=sub_model or None,
                            extra=_drop_none({"subagent_type": task.get("subagent_type"),
                                              "description": task.get("description"),
                                              "agent_id": task.get("task_id")})),
            steps=steps, final_metrics=_sum_metrics(steps),
            extra=_drop_none({"parent_tool_call_id": call_id, "status": end.get("status"),
                              "finish_reason": end.get("finish_reason"), "usage": end.get("usage"),
                              "final_answer": builder.final_answer or end.get("summary")})))
        builders.append(builder)
        if owner is not None:
            owner.link(call_id, trajectory_id, session_id)
    return trajectories


def _task_records(records: list[TranscriptRecord], kind: str) -> dict[str, dict[str, Any]]:
    """The fields of the records of type `kind`, by the task call they belong to."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        if isinstance(record, ExtraRecord) and record.type == kind:
            fields = record.fields()
            if isinstance(fields.get("tool_use_id"), str):
                found[fields["tool_use_id"]] = fields
    return found


def _sum_metrics(steps: list[AtifStep]) -> AtifFinalMetrics:
    metrics = [step.metrics for step in steps if step.metrics is not None]
    costs = [m.cost_usd for m in metrics]
    return AtifFinalMetrics(
        total_prompt_tokens=sum(m.prompt_tokens for m in metrics),
        total_completion_tokens=sum(m.completion_tokens for m in metrics),
        total_cached_tokens=sum(m.cached_tokens or 0 for m in metrics),
        total_cost_usd=None if None in costs else sum(c for c in costs if c is not None),
        total_steps=len(steps))


def _metrics(model: str, usage: Usage | None) -> AtifMetrics | None:
    if usage is None:
        return None
    extra = _drop_none({"cache_write_tokens": usage.cache_write_tokens or None,
                        "reasoning_tokens": usage.reasoning_tokens})
    return AtifMetrics(prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens,
                       cached_tokens=usage.cache_read_tokens,
                       cost_usd=cost_usd(model, usage) if model else None, extra=extra or None)


def _judge_metrics(judge: dict[str, Any]) -> tuple[AtifMetrics | None, int | None]:
    """The judge's requests of one evaluation (their usage, cost and count), as its record
    keeps them; (None, None) for a record from before they were kept."""
    try:
        usage = parse(Usage, judge["usage"])
    except (KeyError, ValueError):
        return None, None
    cost = judge.get("cost_usd")
    calls = judge.get("requests")
    extra = _drop_none({"cache_write_tokens": usage.cache_write_tokens or None,
                        "reasoning_tokens": usage.reasoning_tokens})
    return (AtifMetrics(prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens,
                        cached_tokens=usage.cache_read_tokens,
                        cost_usd=float(cost) if isinstance(cost, int | float) else None, extra=extra or None),
            calls if isinstance(calls, int) and calls > 0 else None)


def _content(text: str, images: Iterable[Image]) -> Content:
    """Plain text, or text and image parts when the message had images ATIF can point to."""
    images = list(images)
    if not images:
        return text
    parts = [AtifContentPart(type="text", text=text)] if text else []
    for image in images:
        if image.source and image.media_type in ATIF_IMAGE_TYPES:
            parts.append(AtifContentPart(type="image", source=AtifImageSource(
                media_type=image.media_type, path=image.source)))
        else:  # pasted or made by a tool: no file to point to
            parts.append(AtifContentPart(type="text", text=f"[image: {image.media_type}]"))
    return parts


def _arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object; text that is not a JSON object is kept under `input`."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def _judge_requests(state: dict[str, Any]) -> int | None:
    goal = state.get("goal")
    value = goal.get("judge_requests") if isinstance(goal, dict) else None
    return value if isinstance(value, int) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _drop_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _fields_of(record: Any) -> dict[str, Any]:
    """A known record's fields by name, as they are (its class is a slots dataclass)."""
    return {item.name: getattr(record, item.name) for item in dataclasses.fields(record)}
