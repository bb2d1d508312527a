"""Slotted value classes: what `@dataclass` gives a class, without its cost at import.

`@dataclass` writes a class's `__init__`, `__repr__` and `__eq__` (frozen: `__setattr__`,
`__delattr__` and `__hash__` too) as source text and compiles each when its module is
imported: 0.3–0.6 ms a class, 12–15 ms of a one-step `recursive run` for the thirty-odd
classes it imports (issue 16). A `Slotted` class writes its `__init__` itself and names its
fields, in order, in `__slots__`; the rest is here, by field, as a dataclass has it: the
repr `Name(a=1, b='x')` (`unshown` fields left out), equality with an object of the same
class whose fields are equal, no hash. A `FrozenSlotted` class is a frozen dataclass:
`__init__` sets its fields once with `init_fields`, assigning or deleting one raises
`FrozenInstanceError`, and it hashes by its fields. Both copy and pickle field by field,
and `replace` is `dataclasses.replace` for them: a new object through `__init__`, which
takes every field by its name. (`dataclasses.fields`, `asdict` and `replace` do not apply.)
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, ClassVar, TypeVar

S = TypeVar("S", bound="Slotted")


class Slotted:
    """A class whose `__slots__` are its fields; see the module's docstring."""

    __slots__: tuple[str, ...] = ()
    unshown: ClassVar[frozenset[str]] = frozenset()  # fields the repr leaves out (`field(repr=False)`)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name not in self.unshown)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return field_values(self) == field_values(other)

    # (no __hash__: a class with its own __eq__ has none, as an unfrozen dataclass)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (type(self), field_values(self))


class FrozenSlotted(Slotted):
    """A `Slotted` class whose fields are set once, by `__init__` through `init_fields`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(field_values(self))


def init_fields(obj: Slotted, **values: Any) -> None:
    """Set fields of `obj` in its `__init__` (a frozen one's, whose `__setattr__` refuses)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


def field_values(obj: Slotted) -> tuple[Any, ...]:
    """The values of `obj`'s fields, in order."""
    return tuple(getattr(obj, name) for name in obj.__slots__)


def replace(obj: S, **changes: Any) -> S:
    """A new `obj` with `changes` to its fields (`dataclasses.replace`)."""
    return type(obj)(**{**dict(zip(obj.__slots__, field_values(obj))), **changes})


def _rebuilt(cls: type[S], values: tuple[Any, ...]) -> S:
    """An object of `cls` with these field values, made without `__init__` (copy, pickle)."""
    obj = object.__new__(cls)
    for name, value in zip(cls.__slots__, values):
        object.__setattr__(obj, name, value)
    return obj
