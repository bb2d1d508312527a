"""Keep `rich.markdown` (and markdown-it behind it) out of `--help`.

typer's help formatter imports `rich.markdown.Markdown` at module level but only uses it for
markdown-mode docstrings, which we do not use. Until something really needs it, a stand-in
module answers that import; the first real use loads the genuine module in its place.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_NAME = "rich.markdown"


def _load_real() -> types.ModuleType:
    if isinstance(sys.modules.get(_NAME), _StandIn):
        del sys.modules[_NAME]
    return importlib.import_module(_NAME)


class _LazyMarkdown:
    """Stands for `rich.markdown.Markdown`; building one builds the real thing."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _load_real().Markdown(*args, **kwargs)


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system probes dunders such as __path__
            raise AttributeError(name)
        return getattr(_load_real(), name)


def install() -> None:
    """Put the stand-in in place unless the real module is already loaded."""
    if _NAME in sys.modules:
        return
    stand_in = _StandIn(_NAME)
    stand_in.Markdown = _LazyMarkdown  # type: ignore[attr-defined]
    sys.modules[_NAME] = stand_in
