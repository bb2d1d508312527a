"""One error tree: every exception class of the package is defined in core/errors.py.

The test imports every module of `recursive_cli` (its `__main__` modules aside: they run the
CLI) and lists the exception classes each one defines itself; a class defined anywhere else
than core/errors.py fails it, unless it is on the allow-list below. The allow-list holds the
classes of the files other issue-28 branches own, each with the branch that moves it; the
coordinator takes a line out as its branch merges, so the list only shrinks.
"""

from __future__ import annotations

import importlib
import pkgutil

import recursive_cli
from recursive_cli.core import errors

# (module, class) defined outside core/errors.py until the branch named moves it there.
NOT_MOVED_YET: set[tuple[str, str]] = set()


def defined_exceptions() -> set[tuple[str, str]]:
    """(module, class) of every exception class a module of the package defines itself."""
    found = set()
    for info in pkgutil.walk_packages(recursive_cli.__path__, "recursive_cli."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        found |= {(module.__name__, value.__qualname__) for value in vars(module).values()
                  if isinstance(value, type) and issubclass(value, BaseException)
                  and value.__module__ == module.__name__}
    return found


def test_every_exception_class_is_defined_in_core_errors() -> None:
    # (a private class, `_TimeUp`, is a signal raised and caught inside its own module)
    strays = {found for found in defined_exceptions() if found[0] != errors.__name__ and not found[1].startswith("_")}
    assert sorted(strays - NOT_MOVED_YET) == []


def test_the_allow_list_names_only_classes_still_outside() -> None:
    # A moved class whose line stayed would let a new stray of that name in unnoticed.
    assert sorted(NOT_MOVED_YET - defined_exceptions()) == []


def test_the_docstring_draws_every_class_of_the_tree() -> None:
    drawn = errors.__doc__ or ""
    classes = [name for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == errors.__name__]
    assert [name for name in classes if f" {name} " not in drawn] == []


def test_the_failures_are_recursive_errors_and_the_signals_are_not() -> None:
    for failure in (errors.McpProtocolError, errors.RpcError, errors.CutOff, errors.McpCallError,
                    errors.McpConfigError, errors.DeadlineError):
        assert issubclass(failure, errors.RecursiveError), failure
    assert issubclass(errors.CutOff, errors.ConnectionClosed)
    assert issubclass(errors.McpConfigError, errors.BadValueError)  # exit 2 when named by a flag
    assert issubclass(errors.DeadlineError, errors.ProviderError)
    for signal in (errors.Interrupted, errors.HaltTurn, errors.PromptBlocked):
        assert not issubclass(signal, errors.RecursiveError), signal
