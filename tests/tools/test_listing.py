"""list_dir and glob, including .gitignore handling in a real git repo."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from recursive_cli.tools.listing import glob_regex


def test_list_dir_tree(call, workspace: Path) -> None:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "deep.py").write_text("")
    (workspace / "src" / "main.py").write_text("")
    (workspace / "README.md").write_text("")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("")
    result = call("list_dir", depth=2)
    assert result.content.splitlines() == ["./", "  README.md", "  src/", "    main.py", "    pkg/"]
    deeper = call("list_dir", path="src", depth=3)
    assert deeper.content.splitlines() == ["src/", "  main.py", "  pkg/", "    deep.py"]


def test_list_dir_caps_entries(call, workspace: Path) -> None:
    for i in range(600):
        (workspace / f"f{i:03}.txt").write_text("")
    result = call("list_dir")
    assert "stopped at 500 entries" in result.content
    assert "f499.txt" in result.content and "f500.txt" not in result.content


def test_list_dir_does_not_expand_node_modules(call, workspace: Path) -> None:
    (workspace / "node_modules" / "lib").mkdir(parents=True)
    result = call("list_dir", depth=5)
    assert "node_modules/" in result.content and "lib" not in result.content


def test_list_dir_errors(call, workspace: Path) -> None:
    (workspace / "f.txt").write_text("")
    assert call("list_dir", path="f.txt").is_error
    assert call("list_dir", path="nope").is_error


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("**/*.py", "a.py", True),
    ("**/*.py", "src/deep/a.py", True),
    ("src/**", "src/deep/a.py", True),
    ("src/*.py", "src/deep/a.py", False),
    ("**/test_?.{py,txt}", "t/test_1.txt", True),
    ("[ab].md", "b.md", True),
    ("[!ab].md", "b.md", False),
    ("a+b(c).txt", "a+b(c).txt", True),
])
def test_glob_regex(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is expected


def test_glob_respects_gitignore(call, git_repo: Path) -> None:
    result = call("glob", pattern="**/*.py")
    assert result.content.splitlines() == ["src/app.py"]
    every = call("glob", pattern="**/*").content.splitlines()
    assert "notes.txt" in every and ".gitignore" in every
    assert not any(line.startswith("build/") or line.endswith(".log") for line in every)


def test_glob_outside_git_walks_and_sorts_newest_first(call, workspace: Path) -> None:
    for i, name in enumerate(["old.py", "mid.py", "new.py"]):
        path = workspace / "pkg" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("")
        os.utime(path, (time.time() - 100 + i * 10,) * 2)
    result = call("glob", pattern="**/*.py")
    assert result.content.splitlines() == ["pkg/new.py", "pkg/mid.py", "pkg/old.py"]


def test_glob_relative_to_path(call, git_repo: Path) -> None:
    assert call("glob", pattern="*.py", path="src").content == "src/app.py"
    assert "no files match" in call("glob", pattern="*.rs").content
    assert call("glob", pattern="/etc/*").is_error
