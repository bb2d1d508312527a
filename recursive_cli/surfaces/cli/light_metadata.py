"""`importlib.metadata` without its imports, for the two questions a run asks of it.

httpx2 and httpcore2 ask `version()` of themselves when they are imported, and pydantic asks
`entry_points(group="pydantic")` (its plugins) when it builds its first validator. The real
module imports `email`, `zipfile`, `csv` and more to answer: some 0.9 MB of a one-step run's
45 MB and ≈ 11 ms. `install()` puts a stand-in under that name in `sys.modules` that answers
those two questions itself when the answer is plain — the `.dist-info` folders in the folders
of `sys.path`, read as the real module would read them — and gives everything else to the real
module: any other name taken from it (`PackageNotFoundError`, `distributions`, …) and every
question it is not sure of (a zip or an `.egg` on `sys.path`, another finder that lists
distributions, two candidates in one folder, no `METADATA`, a distribution that does declare
entry points of that group). The real module is imported then and takes the stand-in's place
in `sys.modules`, so what imports it afterwards gets the real one.

Only the console script installs it (`app.main`), never an embedding program.
"""

from __future__ import annotations

import os
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

NAME = "importlib.metadata"
_SEPARATORS = re.compile(r"[-_.]+")


class _StandIn(types.ModuleType):
    """What `import importlib.metadata` gives until the real module is needed."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _REAL_DUNDERS:
            raise AttributeError(name)  # (probes such as `__wrapped__` need no real module)
        return getattr(real(), name)


_REAL_DUNDERS = frozenset({"__all__"})  # (`from importlib.metadata import *`)


def install() -> None:
    """Answer `version()` and `entry_points(group=…)` without the real module, from now on;
    nothing when it is imported already."""
    if NAME in sys.modules:
        return
    import importlib

    stand_in = _StandIn(NAME, __doc__)
    # the package's own folder, as the real one has it: `from importlib.metadata import x`
    # looks for it, and its submodules (`_meta`, …) load from there as they would
    stand_in.__path__ = [os.path.join(os.path.dirname(importlib.__file__ or ""), "metadata")]
    stand_in.version = version  # type: ignore[attr-defined]
    stand_in.entry_points = entry_points  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in
    importlib.metadata = stand_in  # type: ignore[attr-defined]


def installed() -> bool:
    """Whether the stand-in is what `importlib.metadata` names now."""
    return isinstance(sys.modules.get(NAME), _StandIn)


def real() -> Any:
    """The real `importlib.metadata` (imported now, in the stand-in's place, if need be)."""
    import importlib

    if installed():
        del sys.modules[NAME]
        if isinstance(getattr(importlib, "metadata", None), _StandIn):
            del importlib.metadata  # type: ignore[attr-defined]
    return importlib.import_module(NAME)


def version(distribution_name: str) -> str:
    """The version of the distribution, as `importlib.metadata.version` gives it."""
    found = _plain_version(distribution_name)
    return found if found is not None else str(real().version(distribution_name))


def entry_points(**params: Any) -> Any:
    """`importlib.metadata.entry_points(**params)`: none at all when only `group` is asked
    and no distribution declares that group, else the real module's answer."""
    group = params.get("group")
    if set(params) == {"group"} and isinstance(group, str) and _nobody_declares(group):
        return NoEntryPoints()
    return real().entry_points(**params)


class NoEntryPoints(tuple):  # type: ignore[type-arg]
    """An empty `EntryPoints`: iterates to nothing, selects nothing, names nothing."""

    __slots__ = ()

    def select(self, **params: Any) -> NoEntryPoints:
        return self

    def __getitem__(self, name: Any) -> Any:
        if isinstance(name, (int, slice)):
            return tuple.__getitem__(self, name)
        raise KeyError(name)

    @property
    def names(self) -> set[str]:
        return set()

    @property
    def groups(self) -> set[str]:
        return set()


def _normalize(name: str) -> str:
    """PEP 503 with underscores, as the real module matches folder names."""
    return _SEPARATORS.sub("-", name).lower().replace("-", "_")


def _info_folders() -> Iterator[list[str]] | None:
    """Per folder of `sys.path`, its `.dist-info` / `.egg-info` entries (full paths); None
    when the real module would also look elsewhere (a zip, an `.egg`, another finder)."""
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return None
    roots: list[str] = []
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        if os.path.isdir(root):
            roots.append(root)
        elif os.path.exists(root):
            return None  # a zip file: its members are not listed here
    return ([os.path.join(root, child) for child in _children(root)
             if child.lower().endswith((".dist-info", ".egg-info"))] for root in roots)


def _children(root: str) -> list[str]:
    try:
        return os.listdir(root)
    except OSError:
        return []


def _plain_version(distribution_name: str) -> str | None:
    """The `Version:` of the one `.dist-info` / `.egg-info` in the first folder of `sys.path`
    that has one for this name, when that is all there is to it."""
    folders = _info_folders()
    if folders is None:
        return None
    wanted = _normalize(distribution_name)
    for infos in folders:
        matches = [path for path in infos
                   if _normalize(os.path.basename(path).lower().rpartition(".")[0].partition("-")[0]) == wanted]
        if not matches:
            continue
        if len(matches) > 1:
            return None
        return _version_header(_metadata_file(matches[0]))
    return None


def _metadata_file(info: str) -> str:
    """Where the real module reads a distribution's headers: `METADATA`, else `PKG-INFO`, in
    the folder; an `.egg-info` that is a file is its own."""
    if not os.path.isdir(info):
        return info
    metadata = os.path.join(info, "METADATA")
    return metadata if os.path.exists(metadata) else os.path.join(info, "PKG-INFO")


def _version_header(path: str) -> str | None:
    """The `Version:` header of a METADATA file (None if it has none, or a folded one)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    return None  # the headers end: no Version
                if line[0] in " \t":
                    continue  # a folded header's continuation
                key, colon, value = line.partition(":")
                if colon and key.strip().lower() == "version":
                    return value.strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _nobody_declares(group: str) -> bool:
    """Whether no `entry_points.txt` on `sys.path` has a `[group]` section (False when unsure)."""
    folders = _info_folders()
    if folders is None:
        return False
    for infos in folders:
        for info in infos:
            try:
                with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
                # (the lines are read only where the group's name appears at all)
                if group in text and any(_names_section(line, group) for line in text.split("\n")):
                    return False
            except (FileNotFoundError, NotADirectoryError):  # (an `.egg-info` file: none)
                continue
            except (OSError, UnicodeDecodeError):
                return False
    return True


def _names_section(line: str, group: str) -> bool:
    """Whether an `entry_points.txt` line opens the section `group` (as the real parser reads it)."""
    text = line.strip()
    return text.startswith("[") and text.endswith("]") and text.strip("[]").strip() == group
