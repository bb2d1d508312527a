"""Value classes on the start-up path, and their one JSON form.

A one-step `recursive run` imports no pydantic (tests/test_startup_budget.py): its import and
class building were two fifths of the run's instructions (issue 28). So the values it makes —
messages, events, session records — are standard dataclasses, declared one way:

    @dataclass(slots=True, kw_only=True)      # frozen=True too when the value never changes
    class CheckpointTaken(Notice):
        type: Literal["checkpoint"] = "checkpoint"
        turn: int
        files: list[str] = field(default_factory=list)   # never a bare `[]` or `{}`
        shown: str = hidden("")                         # kept out of every JSON form
        passed: ClassVar[Computed] = Computed("passed")  # a property dumped after the fields

`dataclasses.replace(value, field=new)` makes a changed copy, `as_json(value)`
its JSON value (what pydantic's `model_dump(mode="json")` gave: fields in order, nested values
too, enums by value, paths as text; `exclude_none=True` leaves out the None fields of every
dataclass in it), `dumps(value)` that as compact text. Reading them back from a file is an I/O
edge: `parse(Kind, data)` / `load(Kind, text)` validate them with pydantic, imported then.
A tool's arguments are dataclasses of this style too, validated at the call by msgspec
(core/tool.py's `BaseTool`: a call needs no pydantic either).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")

_HIDDEN = {"hidden": True}


def hidden(default: Any) -> Any:
    """A field with `default` that no JSON form shows (the terminal's text of an event)."""
    return dataclasses.field(default=default, metadata=_HIDDEN)


class Computed:
    """Names a property that the JSON form shows after the fields: `passed: ClassVar[Computed]
    = Computed("passed")` beside `@property def passed`... (pydantic's `computed_field`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_PLANS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}
_PLAIN = frozenset({str, int, float, bool, type(None)})  # their JSON value is themselves (not their subclasses: enums)


def _plan(kind: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields a class shows, in order, and its computed properties (found once per class)."""
    plan = _PLANS.get(kind)
    if plan is None:
        shown = tuple(f.name for f in dataclasses.fields(kind) if not f.metadata.get("hidden"))
        computed = tuple(v.name for c in reversed(kind.__mro__) for v in vars(c).values() if isinstance(v, Computed))
        plan = _PLANS[kind] = (shown, computed)
    return plan


def as_json(value: Any, exclude_none: bool = False, exclude: frozenset[str] = frozenset()) -> Any:
    """The JSON value of `value` (dataclasses, lists, tuples, dicts, enums, paths, scalars);
    `exclude` names top-level fields left out."""
    if type(value) in _PLAIN:  # (most values: asked first, before the attribute look-ups)
        return value
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        names, computed = _plan(type(value))
        out = {}
        for name in names:
            if name in exclude:
                continue
            item = getattr(value, name)
            if item is None and exclude_none:
                continue
            out[name] = item if type(item) in _PLAIN else as_json(item, exclude_none)
        for name in computed:
            out[name] = as_json(getattr(value, name), exclude_none)
        return out
    if hasattr(value, "model_dump"):  # a pydantic model (an I/O edge's) held in a value
        return value.model_dump(mode="json", exclude_none=exclude_none)
    if isinstance(value, (list, tuple)):
        return [as_json(item, exclude_none) for item in value]
    if isinstance(value, dict):
        return {str(key): as_json(item, exclude_none) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    return value


def dumps(value: Any, exclude_none: bool = False, indent: int | None = None) -> str:
    """`value`'s JSON form as text: compact (or indented), UTF-8 characters as they are."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(as_json(value, exclude_none), ensure_ascii=False, separators=separators, indent=indent)


@functools.cache
def adapter(kind: Any) -> TypeAdapter[Any]:
    """pydantic's validator of `kind` (a dataclass, a union…), built once, when first read."""
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def parse(kind: type[T], value: Any) -> T:
    """`value` (JSON data) validated as a `kind`; ValueError (pydantic's ValidationError) if it is not one."""
    return adapter(kind).validate_python(value)  # type: ignore[no-any-return,arg-type]


def load(kind: type[T], text: str | bytes) -> T:
    """JSON text validated as a `kind`; ValueError (pydantic's ValidationError) if it is not one."""
    return adapter(kind).validate_json(text)  # type: ignore[no-any-return,arg-type]
