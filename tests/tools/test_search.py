"""search_files with the Python fallback (and ripgrep when installed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

BACKENDS = ["python"] + (["rg"] if shutil.which("rg") else [])


_WHICH = shutil.which


def no_ripgrep(name: str, *args: object, **kwargs: object) -> str | None:
    """shutil.which as if rg were not installed (everything else, bwrap included, still found)."""
    return None if name == "rg" else _WHICH(name, *args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch) -> str:
    if request.param == "python":
        monkeypatch.setattr("recursive_cli.tools.search.shutil.which", no_ripgrep)
    return request.param


def test_search_respects_gitignore(call, git_repo: Path, backend: str) -> None:
    result = call("search_files", pattern="needle")
    assert not result.is_error, result.content
    lines = sorted(result.content.splitlines())
    assert lines == ["notes.txt:1:a needle here", "src/app.py:2:    return 'needle'"]


def test_search_glob_and_case(call, git_repo: Path, backend: str) -> None:
    result = call("search_files", pattern="NEEDLE", case_insensitive=True, glob="*.py")
    assert result.content.splitlines() == ["src/app.py:2:    return 'needle'"]
    result = call("search_files", pattern="NEEDLE")
    assert "no matches" in result.content and not result.is_error


def test_search_in_one_file_and_path(call, git_repo: Path, backend: str) -> None:
    one_file = call("search_files", pattern="needle", path="notes.txt")
    assert one_file.content == "notes.txt:1:a needle here"
    assert call("search_files", pattern="needle", path="src").content.startswith("src/app.py:2:")


def test_search_caps_results(call, workspace: Path, backend: str) -> None:
    (workspace / "many.txt").write_text("hit\n" * 500)
    result = call("search_files", pattern="hit")
    hits = [line for line in result.content.splitlines() if line.startswith("many.txt:")]
    assert len(hits) == 100
    assert "max_results=100" in result.content
    result = call("search_files", pattern="hit", max_results=5)
    assert result.content.count("many.txt:") == 5


def test_search_skips_binary_and_git(call, workspace: Path, backend: str) -> None:
    (workspace / "bin.dat").write_bytes(b"hit\x00hit\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "x").write_text("hit\n")
    (workspace / ".hidden").write_text("hit\n")
    assert call("search_files", pattern="hit").content == ".hidden:1:hit"


def test_search_invalid_regex_is_an_error(call, workspace: Path, backend: str) -> None:
    (workspace / "a.txt").write_text("x\n")
    result = call("search_files", pattern="(unclosed")
    assert result.is_error
    assert "regular expression" in result.content or "regex" in result.content


def test_search_skips_fifos_and_symlinks_out(call, workspace: Path, tmp_path: Path,
                                             backend: str) -> None:
    os.mkfifo(workspace / "pipe")
    (tmp_path / "secret.txt").write_text("hit\n")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    (workspace / "real.txt").write_text("hit\n")
    assert call("search_files", pattern="hit").content == "real.txt:1:hit"
