"""The goal judge: a model asked, with no tools, whether the goal condition now holds.

It is shown evidence, not just the agent's claims: the recent transcript with tool calls and
their results, and the checks that passed. It must answer with strict JSON
`{"achieved": bool, "reason": str}`; a malformed answer is asked for once more, then counts
as "not achieved". Every request is charged to the run's budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from ..core.budget import Budget
from ..core.event_models import JudgeVerdict
from ..core.events import EventSink, NullSink
from ..core.interrupt import InterruptToken
from ..core.kernel import side_call
from ..core.messages import Message, Usage
from ..core.provider import ChatProvider, ProviderHooks
from .checks import CheckResult

EVIDENCE_CHARS = 16_000
MESSAGE_CHARS = 2_000

JUDGE_SYSTEM = """\
You judge whether a coding agent has achieved a goal in its workspace. Decide from the \
evidence: the tool calls the agent made and what they returned, and the checks that were run. \
Do not take the agent's own claims on trust; when the evidence does not show the condition \
holds, it is not achieved.
Answer with one JSON object and nothing else:
{"achieved": true or false, "reason": "one or two sentences citing the evidence"}"""

RETRY_PROMPT = ('That was not a JSON object of the form {"achieved": true|false, "reason": "..."}. '
                "Reply with only that object.")


class GoalJudge:
    """Asks `provider` about `condition`; counts its requests (a shared scripted provider's
    replay must skip them on resume) and tells `sink` of each (telemetry's judge spans)."""

    def __init__(self, provider: ChatProvider, budget: Budget, hooks: ProviderHooks,
                 interrupt: InterruptToken, sink: EventSink | None = None) -> None:
        self.provider = provider
        self.requests = 0
        self._budget = budget
        self._hooks = hooks
        self._interrupt = interrupt
        self._sink = sink or NullSink()

    async def judge(self, condition: str, task: str, transcript: Sequence[Message],
                    checks: Sequence[CheckResult]) -> JudgeVerdict:
        """The verdict on `condition`; raises ProviderError or Interrupted like a turn would."""
        messages = [Message.system(JUDGE_SYSTEM),
                    Message.user(evidence_prompt(condition, task, transcript, checks))]
        spent: list[Usage] = []
        answer = await self._ask(messages, spent)
        verdict = parse_verdict(answer)
        if verdict is None:
            messages += [Message(role="assistant", content=answer), Message.user(RETRY_PROMPT)]
            answer = await self._ask(messages, spent)
            verdict = parse_verdict(answer)
        if verdict is None:
            verdict = JudgeVerdict(achieved=False, valid=False,
                                   reason=f"no JSON verdict in its answer: {_clip(answer, 200)!r}")
        price = self._budget.price.of(self.provider.model)  # (as the budget charged them)
        costs = [price(usage) for usage in spent]
        return replace(verdict, model=self.provider.model, usage=sum(spent, Usage()), requests=len(spent),
                       cost_usd=None if None in costs else sum(cost for cost in costs if cost is not None))

    async def _ask(self, messages: list[Message], spent: list[Usage]) -> str:
        self.requests += 1
        reply = await side_call("judge", self.provider, messages, self._hooks, self._interrupt, self._sink)
        self._budget.charge(reply.usage, model=self.provider.model)  # it may be --judge-model
        spent.append(reply.usage)
        return reply.message.content


def parse_verdict(answer: str) -> JudgeVerdict | None:
    """The verdict in a strict JSON answer (a single ``` fence around it is tolerated), or None."""
    text = answer.strip()
    if text.startswith("```") and text.endswith("```") and text.count("```") == 2:
        text = text[3:-3].removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("achieved"), bool):
        return None
    reason = data.get("reason")
    if not isinstance(reason, str):
        return None
    return JudgeVerdict(achieved=data["achieved"], reason=reason.strip())


def evidence_prompt(condition: str, task: str, transcript: Sequence[Message],
                    checks: Sequence[CheckResult]) -> str:
    """The judge's question: the condition, the task, the checks and the recent transcript."""
    parts = [f"Goal condition:\n{condition}", f"Task the agent was given:\n{_clip(task, MESSAGE_CHARS)}"]
    if checks:
        parts.append("Checks run in the workspace after the agent's turn (all passed):\n"
                     + "\n".join(f"$ {c.command}  ({c.status()})" for c in checks))
    parts.append("Recent transcript, oldest first:\n" + render_transcript(transcript, EVIDENCE_CHARS))
    parts.append("Does the goal condition hold now? Answer with the JSON object only.")
    return "\n\n".join(parts)


def render_transcript(messages: Sequence[Message], limit: int) -> str:
    """The newest messages as plain text, as many as fit in `limit` characters."""
    blocks: list[str] = []
    used = 0
    for message in reversed(messages):
        if message.role == "system":
            continue
        block = _render(message)
        if used + len(block) > limit:
            blocks.append("[earlier messages left out]")
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(reversed(blocks))


def _render(message: Message) -> str:
    if message.role == "tool":
        label = "tool result (error)" if message.is_error else "tool result"
        return f"[{label}]\n{_clip(message.content, MESSAGE_CHARS)}"
    lines = [f"[{message.role}]\n{_clip(message.content, MESSAGE_CHARS)}"] if message.content else []
    lines += [f"[tool call] {call.name} {_clip(call.arguments, MESSAGE_CHARS // 2)}"
              for call in message.tool_calls]
    return "\n".join(lines) or f"[{message.role}]"


def _clip(text: str, limit: int) -> str:
    """`text`, or its start and end with the middle left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters left out] …\n{text[-half:]}"
