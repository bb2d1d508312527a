"""search_files names the files it did not search because they are over 50 MiB (issue 14).

The big files are sparse (text at the start, then `truncate` past 50 MiB), so they cost
almost no disk. The Python back end is the one with the limit (ripgrep searches them).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from clitools import invoke, json_lines, write_script

from recursive_cli.tools.search import MAX_FILE_BYTES, MAX_SKIPPED_NAMES

TEXT = "a needle in a big file\n" * 500  # over the 8 KiB binary probe: it reads as text


_WHICH = shutil.which


def no_ripgrep(name: str, *args: object, **kwargs: object) -> str | None:
    """shutil.which as if rg were not installed (everything else, bwrap included, still found)."""
    return None if name == "rg" else _WHICH(name, *args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def python_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("recursive_cli.tools.search.shutil.which", no_ripgrep)


def big_file(path: Path, text: str = TEXT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.truncate(path, MAX_FILE_BYTES + 1)  # sparse: the rest reads as zeros
    return path


def test_skipped_files_are_named_in_a_final_line(call, workspace: Path) -> None:
    big_file(workspace / "logs" / "big.log")
    big_file(workspace / "data.csv")
    (workspace / "small.txt").write_text("one needle\n")
    result = call("search_files", pattern="needle")
    assert not result.is_error
    *matches, last = result.content.splitlines()
    assert matches == ["small.txt:1:one needle"]
    assert last == "[skipped 2 files over 50 MiB (not searched): data.csv, logs/big.log]"
    assert result.summary == "1 match, 2 skipped"


def test_no_matches_still_says_what_was_not_searched(call, workspace: Path) -> None:
    big_file(workspace / "big.log")
    (workspace / "small.txt").write_text("nothing here\n")
    result = call("search_files", pattern="needle")
    assert result.content == ("no matches for 'needle' in .\n"
                              "[skipped 1 file over 50 MiB (not searched): big.log]")
    assert result.summary == "0 matches, 1 skipped"


def test_a_big_file_searched_by_path(call, workspace: Path) -> None:
    big_file(workspace / "big.log")
    result = call("search_files", pattern="needle", path="big.log")
    assert result.content.endswith("\n[skipped 1 file over 50 MiB (not searched): big.log]")


def test_the_list_is_capped(call, workspace: Path) -> None:
    names = [f"dump-{i:02}.log" for i in range(MAX_SKIPPED_NAMES + 5)]
    for name in names:
        big_file(workspace / name)
    result = call("search_files", pattern="needle")
    shown = ", ".join(names[:MAX_SKIPPED_NAMES])
    assert result.content.splitlines()[-1] == (
        f"[skipped {len(names)} files over 50 MiB (not searched): {shown} and 5 more]")
    assert names[-1] not in result.content


def test_small_and_binary_files_are_not_reported(call, workspace: Path) -> None:
    (workspace / "small.txt").write_text("needle\n")
    zeros = workspace / "disk.img"
    zeros.touch()
    os.truncate(zeros, MAX_FILE_BYTES + 1)  # binary: skipped as binary files always were
    result = call("search_files", pattern="needle")
    assert result.content == "small.txt:1:needle"


def test_the_model_sees_the_note_through_the_cli(tmp_path: Path, workspace: Path) -> None:
    big_file(workspace / "big.log")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "search_files", "arguments": {"pattern": "needle"}}]},
        {"text": "searched"}])
    proc = invoke("run", "find the needle", "-C", str(workspace), "--provider", "scripted",
                  "--script", str(script), "-o", "stream-json")
    assert proc.returncode == 0, proc.stderr
    results = [block for line in json_lines(proc.stdout) if line["type"] == "user"
               for block in line["message"]["content"]]
    assert len(results) == 1, json.dumps(results)
    assert results[0]["content"].endswith("[skipped 1 file over 50 MiB (not searched): big.log]")
