"""Import the few classes the providers use from an SDK without running its whole `__init__`.

`import openai` costs about 0.35 s and `import anthropic` 0.8 s on a small machine, most of it
in their `types` packages, whose `__init__.py` files import every generated model of the API
(thousands of pydantic classes) that a provider sending its own JSON never touches. The
client, stream and error classes live in private modules (`openai._client`, …) that need only
a few of those types.

`load_names` imports those modules with two kinds of package body deferred: the SDK's top
package, and each of its `types` packages whose `__init__.py` does nothing but re-export from
its own submodules. Such a package module is created (so its submodules import as usual) but
its body runs only when someone asks it for a name that is not a submodule — nor, in a
`types` package, one of its re-exports (`from .x import Name as Name`, resolved by importing
`.x` alone). Asking for anything else — `openai.OpenAI`, `from anthropic.types import *` —
runs the real body in place, so the package ends up as a normal import leaves it; whoever
imports the SDK later sees the same classes. (Until then the top package's own start-up code has not run: e.g.
`OPENAI_LOG` does not switch on the SDK's logging.)

Only the import is narrowed: requests go through the same SDK classes. If the narrow import
fails in any way (a new SDK version moved a class), the modules it touched are dropped and the
SDK is imported whole, as before.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

# `from .module import A as A, B` / `from .module import (\n A as A,\n)`: the re-exports of a
# generated `types/__init__.py`. A star import makes the map unusable (the body runs instead).
_REEXPORT = re.compile(r"^from \.([\w.]*) import (\([^)]*\)|[^\n]*)", re.MULTILINE)
# What else a pure re-export `__init__.py` may hold: comments, a docstring, `from __future__`,
# `__all__` (one line, or a bracketed list over several).
_BORING = re.compile(r'^\s*(#[^\n]*|from __future__ import [^\n]*|__all__\s*[:=+][^\n\[(]*([\[(][^\])]*[\])])?[^\n]*)$'
                     r'|\A\s*("""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\')', re.MULTILINE)
_lock = threading.RLock()


def load_names(package: str, *paths: str) -> tuple[Any, ...]:
    """The objects named by `paths` (`"_client.AsyncOpenAI"`: module relative to `package`, then
    the name), importing no more of the SDK than their modules need."""
    modules = sorted({path.rpartition(".")[0] for path in paths})
    with _lock:
        if package in sys.modules:  # imported already (whole or narrow): nothing to save
            loaded = [importlib.import_module(f"{package}.{module}") for module in modules]
        else:
            loaded = _narrow_import(package, modules)
    by_module = dict(zip(modules, loaded))
    try:
        return tuple(getattr(by_module[module], name) for module, _, name in (p.rpartition(".") for p in paths))
    except AttributeError:  # the SDK moved a class: take it from the top package
        top = importlib.import_module(package)
        return tuple(getattr(top, path.rpartition(".")[2]) for path in paths)


def _narrow_import(package: str, modules: Sequence[str]) -> list[ModuleType]:
    finder = _DeferringFinder(package)
    sys.meta_path.insert(0, finder)
    try:
        return [importlib.import_module(f"{package}.{module}") for module in modules]
    except Exception:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]  # start again from nothing, the ordinary way
        importlib.import_module(package)
        return [importlib.import_module(f"{package}.{module}") for module in modules]
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)


class _DeferringFinder(importlib.abc.MetaPathFinder):
    """Finds `package` and its `types` packages as usual, but hands the top package and each
    pure re-export package a deferring loader."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        parts = fullname.split(".")
        if parts[0] != self.package or (len(parts) > 1 and parts[1] != "types"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is None or not spec.origin \
                or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec  # a plain module, a namespace package or something unusual: as usual
        pure = _only_reexports(spec.loader.get_source(fullname) or "")
        if fullname != self.package and not pure:
            return spec  # a package whose __init__ does more than re-export: its body runs now
        spec.loader = _DeferredBodyLoader(spec.loader, pure)
        return spec


class _DeferredBodyLoader(importlib.abc.Loader):
    """Creates a package module whose `__init__` body runs on the first name it cannot resolve."""

    def __init__(self, real: importlib.machinery.SourceFileLoader, pure: bool) -> None:
        self.real = real
        self.pure = pure

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.real  # as if loaded the ordinary way
        module.__loader__ = self.real
        module.__getattr__ = _Resolver(module, self.real, self.pure)  # type: ignore[method-assign]


class _Resolver:
    """A deferred package's module-level `__getattr__` (PEP 562). The re-exports are read from
    a pure re-export body only: another body (the top package's) may rebind what it imported."""

    def __init__(self, module: ModuleType, loader: importlib.machinery.SourceFileLoader, pure: bool) -> None:
        self.module = module
        self.loader = loader
        self.reexports: dict[str, tuple[str, str]] | None = None if pure else {}
        self.body = threading.RLock()  # held while the body runs: a second thread waits for it

    def __call__(self, name: str) -> Any:
        package = self.module.__name__
        found = self._reexport(name)
        if found is not None:
            module, attribute = found
            value = (importlib.import_module(f".{attribute}", package) if not module  # `from . import x`
                     else getattr(importlib.import_module(f".{module}", package), attribute))
            setattr(self.module, name, value)
            return value
        if name.isidentifier() and self._is_submodule(name):
            return importlib.import_module(f"{package}.{name}")
        with self.body:
            if self.module.__dict__.get("__getattr__") is self:
                del self.module.__dict__["__getattr__"]  # the body may define its own
                self.loader.exec_module(self.module)
        return getattr(self.module, name)

    def _reexport(self, name: str) -> tuple[str, str] | None:
        if self.reexports is None:
            self.reexports = _reexports(self.loader.get_source(self.module.__name__) or "")
        return self.reexports.get(name)

    def _is_submodule(self, name: str) -> bool:
        path = getattr(self.module, "__path__", None)
        return importlib.machinery.PathFinder.find_spec(f"{self.module.__name__}.{name}", path) is not None


def _only_reexports(source: str) -> bool:
    """Whether `source` does nothing but re-export names of its own submodules (a docstring,
    comments, `from __future__` and `__all__` aside): deferring such a body changes nothing
    but when those submodules are imported."""
    rest = _REEXPORT.sub("", source)
    rest = _BORING.sub("", rest)
    return not rest.strip()


def _reexports(source: str) -> dict[str, tuple[str, str]]:
    """`{exported name: (relative module, its name there)}` for the plain re-exports in `source`;
    empty when a star import means the names cannot be known without running it."""
    found: dict[str, tuple[str, str]] = {}
    for module, names in _REEXPORT.findall(source):
        names = re.sub(r"#[^\n]*", "", names)
        for item in names.strip("()").replace("\n", " ").split(","):
            words = item.split()
            if not words:
                continue
            if words[0] == "*":
                return {}
            found[words[-1]] = (module, words[0])
    return found
