"""A session's per-feature state: one typed part per feature, saved together in meta.json `state`.

Each feature declares its part as a dataclass on `StatePart` with a `key` (its field in
`state`): the goal driver's `GoalState` ("goal"), the event loop's `LoopState` ("loop"), … —

    @dataclass(slots=True, kw_only=True)
    @dataclass(slots=True, kw_only=True)
class SideReplies(StatePart):
        key: ClassVar[str] = "side_replies"
        count: int = 0

The core knows none of them: `SessionState` validates a part
when its feature first asks for it, so a damaged part is one `SessionStateError` naming the
feature and the field, whichever feature it belongs to. Parts of features this process does not
use (or a newer version wrote) are kept as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .errors import SessionStateError
from .values import as_json, parse


@dataclass(slots=True, kw_only=True)
class StatePart:
    """A feature's part of the session state (validated with pydantic when first read)."""

    key: ClassVar[str]  # its field in meta.json `state`


P = TypeVar("P", bound=StatePart)


class SessionState:
    """The state parts of one session; `put` saves the whole state at once (meta.json)."""

    def __init__(self, saved: Mapping[str, Any] | None = None,
                 save: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._raw: dict[str, Any] = dict(saved or {})
        self._save = save or (lambda state: None)

    def get(self, kind: type[P]) -> P | None:
        """The part of `kind`, if the session has one; SessionStateError when it is damaged."""
        raw = self._raw.get(_key(kind))
        if raw is None:
            return None
        try:
            return parse(kind, raw)
        except ValueError as exc:  # pydantic's ValidationError
            raise SessionStateError(_key(kind), first_problem(exc)) from None

    def put(self, kind: type[P], part: P | None) -> None:
        """Set (None: remove) the part of `kind` and persist the whole state now."""
        if part is None:
            self._raw.pop(_key(kind), None)
        else:
            self._raw[_key(kind)] = as_json(part)
        self._save(self.dump())

    def set_saver(self, save: Callable[[dict[str, Any]], None]) -> None:
        self._save = save

    def __contains__(self, kind: type[StatePart] | str) -> bool:
        return (kind if isinstance(kind, str) else _key(kind)) in self._raw

    def __getitem__(self, key: str) -> Any:
        """A part as saved (JSON data), by its key."""
        return self._raw[key]

    def dump(self) -> dict[str, Any]:
        """The state as meta.json keeps it."""
        return dict(self._raw)


@dataclass(slots=True, kw_only=True)
class SideReplies(StatePart):
    """Model replies the session used outside its conversation (a goal's judge asking the
    run's own provider): a provider that replays a script skips them on resume, together with
    the replies the conversation holds."""

    key: ClassVar[str] = "side_replies"
    count: int = 0


def count_side_replies(state: SessionState, replies: int) -> None:
    """Add `replies` to the session's side replies and save the state."""
    if replies > 0:
        saved = state.get(SideReplies) or SideReplies()
        state.put(SideReplies, SideReplies(count=saved.count + replies))


def _key(kind: type[StatePart]) -> str:
    key = getattr(kind, "key", None)
    if not isinstance(key, str):
        raise TypeError(f"{kind.__name__} is not a state part: it has no `key`")
    return key


def first_problem(exc: ValueError) -> str:
    """`field: what is wrong` for the first error pydantic found (one line)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    error = errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
