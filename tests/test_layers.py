"""The package's layers import only downward: core → plugins → features → drivers → façade → launch → surfaces.

The layer of each module comes from `LAYERS` (longest prefix wins). A new module under a
known folder gets that folder's layer; a module in no layer fails the test, so every new
file is placed on purpose. TYPE_CHECKING imports count too: a type from above is a
dependency on above.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "recursive_cli"

CORE, PLUGINS, FEATURES, DRIVERS, FACADE, LAUNCH, SURFACES = range(7)
NAMES = ("core", "plugins", "features", "drivers", "façade", "launch", "surfaces")
LAYERS = {
    # core: the vocabulary, the kernel, the runtime core and its extension points
    "core": CORE,
    # plugins: implementations of the core's protocols
    "providers": PLUGINS, "tools": PLUGINS, "sinks": PLUGINS, "net": PLUGINS,
    # features: attach to a runtime through its extension points
    "features": FEATURES,
    # drivers: runs of many turns over RuntimeCore.run
    "drivers": DRIVERS,
    # the library façade
    "": FACADE, "agent": FACADE,
    # launch: what every front end shares to start the agent (options, settings, sessions)
    "launch": LAUNCH,
    # surfaces: build a runtime through the façade
    "surfaces": SURFACES, "__main__": SURFACES,
}


def layer_of(module: str) -> int:
    best = max((key for key in LAYERS if module == key or module.startswith(key + ".") or key == ""),
               key=len)
    return LAYERS[best]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[:len(package) - node.level + 1] if node.level > 1 else package)
            target = f"{base}.{node.module}" if node.module and base else (node.module or base)
            subs = [f"{target}.{alias.name}".lstrip(".") for alias in node.names]
            out.update(sub for sub in subs if sub in known)
            if not all(sub in known for sub in subs):
                out.add(target)
    return out


def test_layers_import_only_downward() -> None:
    known = modules()
    upward = []
    for name, path in sorted(known.items()):
        mine = layer_of(name)
        for target in sorted(imports(name, path, known)):
            theirs = layer_of(target)
            if theirs > mine:
                upward.append(f"{name} ({NAMES[mine]}) imports {target} ({NAMES[theirs]})")
    assert upward == []


def folder_of(module: str, known: dict[str, Path]) -> str:
    """The folder a module sits in (a package is its own folder). `__main__` is the surfaces'
    entry point that `python -m` needs in the package root: it counts as a surface."""
    if module == "__main__":
        return "surfaces"
    parts = module.split(".")
    return ".".join(parts if known[module].name == "__init__.py" else parts[:-1])


def folder_edges(known: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {folder_of(name, known): set() for name in known}
    for name, path in known.items():
        for target in imports(name, path, known):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target in known and folder_of(target, known) != folder_of(name, known):
                edges[folder_of(name, known)].add(folder_of(target, known))
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one folder (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_circle_between_folders() -> None:
    """A folder may import from another, or be imported by it, never both (through any chain)."""
    assert circles(folder_edges(modules())) == KNOWN_CIRCLES


KNOWN_CIRCLES: list[list[str]] = []  # none (issue 28 broke up the last two)
