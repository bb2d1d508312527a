"""Where the final answer goes besides stdout: `--output-last-message FILE` and `--output-schema FILE`.

`--output-last-message` writes the answer to a file at the end, whatever the outcome (Codex's
`-o`): empty, with a warning, when the run gave none, so that a script never reads an older
answer. `--output-schema` asks for a final answer that validates against a JSON Schema: the
prompt says so, the answer is parsed as JSON (a fenced ```json block is accepted), and when
it does not validate the model is asked once more with the validation error; then the run
fails (exit 1, `error_max_structured_output_retries`, as Claude Code names it). The value is
the result's `structured_output`. Validation is the `jsonschema` package's, imported only
when the option is given.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import utf8
from ..core.errors import OutputOptionError  # noqa: F401 (re-exported)
from ..core.events import FinishReason
from ..core.kernel import TurnOutcome

if TYPE_CHECKING:
    from ..agent import AgentRuntime

Work = Callable[["AgentRuntime"], Awaitable[TurnOutcome]]
_FENCE = re.compile(r"```[ \t]*(json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass(slots=True)
class OutputSchema:
    """A checked JSON Schema from `--output-schema FILE`."""

    path: Path
    schema: Any
    _validator: Any = field(repr=False)

    def instruction(self) -> str:
        """What the prompt tells the model about the answer it must give."""
        return ("\n\nWhen you are done, give your final answer as a single JSON value that "
                "validates against the JSON Schema below, and nothing else: no prose around it "
                "(a ```json fenced block is fine).\n\n```json\n" + self.text() + "\n```")

    def retry_prompt(self, problem: str) -> str:
        """The request to try again after an answer that did not validate."""
        return (f"Your final answer does not match the required JSON Schema: {problem}\n\n"
                "Reply with only the corrected JSON value, validating against this schema:\n\n"
                "```json\n" + self.text() + "\n```")

    def text(self) -> str:
        return json.dumps(self.schema, ensure_ascii=False, indent=2)

    def check(self, answer: str) -> tuple[Any, str]:
        """(the answer as JSON, "") when it validates, else (None, what is wrong)."""
        try:
            value = parse_json_answer(answer)
        except ValueError as exc:
            return None, str(exc)
        from jsonschema.exceptions import best_match

        error = best_match(self._validator.iter_errors(value))
        if error is None:
            return value, ""
        return None, f"at {error.json_path}: {error.message}"


def load_schema(path: Path) -> OutputSchema:
    """The schema in `path`, checked against its metaschema; OutputOptionError saying why not."""
    try:
        text = utf8.decode(path.read_bytes())
    except OSError as exc:
        raise OutputOptionError(f"--output-schema: cannot read {path}: {exc.strerror or exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise OutputOptionError(f"--output-schema: {path} is not JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise OutputOptionError(f"--output-schema: {path} must hold a JSON Schema (an object)")
    return checked_schema(schema, "--output-schema", path, f"--output-schema: {path}")


def checked_schema(schema: Any, flag: str, path: Path, shown: str) -> OutputSchema:
    """`schema` (given by `flag`, from `path`) checked against its metaschema;
    OutputOptionError naming `shown` when it is not a schema."""
    try:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for
    except ImportError:  # a dependency (pyproject.toml); only a broken install lacks it
        raise OutputOptionError(f"{flag} needs the jsonschema package: pip install jsonschema") from None
    validator_class = validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        where = exc.json_path if exc.path else "the top level"
        raise OutputOptionError(f"{shown} is not a valid JSON Schema: {exc.message} (at {where})") from None
    return OutputSchema(path, schema, validator_class(schema))


def parse_json_answer(answer: str) -> Any:
    """The answer as JSON: the whole text, else its first fenced block (```json first)."""
    text = answer.strip()
    if not text:
        raise ValueError("the answer is empty, not JSON")
    try:
        return json.loads(text)
    except ValueError as whole:
        blocks = _FENCE.findall(text)
        ordered = [body for tag, body in blocks if tag] + [body for tag, body in blocks if not tag]
        for body in ordered:
            try:
                return json.loads(body)
            except ValueError:
                continue
        raise ValueError(f"the answer is not JSON ({whole})") from None


@dataclass(slots=True)
class OutputRequest:
    """What `--output-last-message` and `--output-schema` ask of this run."""

    last_message: Path | None = None
    schema: OutputSchema | None = None
    structured_output: Any = None  # set once an answer validated

    def prompt(self, prompt: str) -> str:
        """`prompt` with the schema's instruction, when there is a schema and a prompt."""
        return prompt + self.schema.instruction() if self.schema is not None and prompt else prompt

    def wrap(self, work: Work) -> Work:
        """`work`, then the schema check and its one retry (unchanged without a schema)."""
        schema = self.schema
        if schema is None:
            return work

        async def checked(runtime: AgentRuntime) -> TurnOutcome:
            outcome = await work(runtime)
            for attempt in (1, 2):
                if outcome.finish_reason is not FinishReason.COMPLETED:
                    return outcome
                value, problem = schema.check(outcome.text)
                if not problem:
                    self.structured_output = value
                    return outcome
                if attempt == 2:
                    return TurnOutcome(
                        FinishReason.STRUCTURED_OUTPUT_INVALID, text=outcome.text,
                        detail=f"the final answer does not match the JSON Schema in {schema.path}, "
                               f"asked twice: {problem}")
                _note(f"note: the answer does not match --output-schema ({problem}); asking once more")
                outcome = await runtime.run(schema.retry_prompt(problem))
            return outcome

        return checked

    def write_last_message(self, text: str) -> str:
        """Write `text` to --output-last-message; the problem ("" when written, or not asked)."""
        if self.last_message is None:
            return ""
        if not text:
            _note(f"warning: the run gave no final answer; {self.last_message} is left empty")
        try:
            self.last_message.write_bytes(utf8.encode(text.rstrip("\n") + "\n" if text else ""))
        except OSError as exc:
            return f"--output-last-message: cannot write {self.last_message}: {exc.strerror or exc}"
        return ""


def output_request(last_message: Path | None, schema_path: Path | None) -> OutputRequest:
    """The checked request; OutputOptionError (exit 2) for a file that cannot be used."""
    if last_message is not None:
        target = last_message.expanduser()
        if target.is_dir():
            raise OutputOptionError(f"--output-last-message: {last_message} is a folder; give a file name")
        if not target.parent.is_dir():
            raise OutputOptionError(f"--output-last-message: no folder {target.parent} to write "
                                    f"{target.name} in")
        last_message = target
    schema = load_schema(schema_path.expanduser()) if schema_path is not None else None
    return OutputRequest(last_message, schema)


def _note(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
