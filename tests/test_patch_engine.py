"""Focused tests of the V4A patch engine: messages, sandboxing, moves and fuzzy matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursive_cli.tools.patch_engine import PatchError, apply_patch


class OutsideWorkspace(Exception):
    """What the fake sandbox raises for a path it refuses."""


def _patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def _resolver(root: Path):
    def resolve(path: str) -> Path:
        if path.startswith("/") or ".." in Path(path).parts:
            raise OutsideWorkspace(path)
        return root / path

    return resolve


def test_missing_line_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\nb = 2\n")
    patch = _patch("*** Update File: app.py", "@@", " a = 1", "-c = 3", "+c = 4")

    with pytest.raises(PatchError) as caught:
        apply_patch(patch, _resolver(tmp_path))

    message = str(caught.value)
    assert "app.py" in message and "'c = 3'" in message and "\n" not in message
    assert (tmp_path / "app.py").read_text() == "a = 1\nb = 2\n"


def test_missing_context_header_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def f():\n    pass\n")
    patch = _patch("*** Update File: app.py", "@@ def g():", "-    pass", "+    return 1")

    with pytest.raises(PatchError, match=r"app\.py.*'@@ def g\(\):' was not found"):
        apply_patch(patch, _resolver(tmp_path))


def test_sandbox_refusal_propagates_before_any_write(tmp_path: Path) -> None:
    patch = _patch("*** Add File: inside.txt", "+ok", "*** Add File: ../outside.txt", "+no")

    with pytest.raises(OutsideWorkspace):
        apply_patch(patch, _resolver(tmp_path))

    assert list(tmp_path.iterdir()) == []


def test_syntax_error_leaves_disk_untouched(tmp_path: Path) -> None:
    patch = _patch("*** Add File: new.txt", "+hello", "*** Rename File: x")

    with pytest.raises(PatchError, match="'\\*\\*\\* Rename File: x' is not a valid"):
        apply_patch(patch, _resolver(tmp_path))

    assert not (tmp_path / "new.txt").exists()


def test_move_to_new_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "old.py").write_text("x = 1\ny = 2\n")
    patch = _patch("*** Update File: src/old.py", "*** Move to: lib/deep/new.py", "@@", "-y = 2", "+y = 3")

    result = apply_patch(patch, _resolver(tmp_path))

    assert not (tmp_path / "src" / "old.py").exists()
    assert (tmp_path / "lib" / "deep" / "new.py").read_text() == "x = 1\ny = 3\n"
    assert result.modified == ["lib/deep/new.py"]
    assert result.summary() == "M lib/deep/new.py"


def test_fuzzy_match_ignores_whitespace_and_typographic_punctuation(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("title   \n    indented\nit\u2019s \u2014 done\n")
    patch = _patch(
        "*** Update File: notes.md",
        "@@",
        " title",
        "-indented",
        "+  reindented",
        "-it's - done",
        "+finished",
    )

    apply_patch(patch, _resolver(tmp_path))

    assert (tmp_path / "notes.md").read_text() == "title   \n  reindented\nfinished\n"


def test_summary_lists_added_modified_deleted(tmp_path: Path) -> None:
    (tmp_path / "foo.txt").write_text("one\n")
    (tmp_path / "old.txt").write_text("bye\n")
    patch = _patch(
        "*** Delete File: old.txt",
        "*** Update File: foo.txt",
        "@@",
        "-one",
        "+two",
        "*** Add File: bar.md",
        "+# Bar",
    )

    result = apply_patch(patch, _resolver(tmp_path))

    assert result.summary() == "A bar.md\nM foo.txt\nD old.txt"


def test_partial_failure_keeps_earlier_changes_and_says_so(tmp_path: Path) -> None:
    patch = _patch("*** Add File: made.txt", "+hi", "*** Delete File: ghost.txt")

    with pytest.raises(PatchError, match="ghost.txt.*kept: A made.txt") as caught:
        apply_patch(patch, _resolver(tmp_path))

    assert (tmp_path / "made.txt").read_text() == "hi\n"
    assert caught.value.applied is not None and caught.value.applied.added == ["made.txt"]


def test_heredoc_wrapper_is_accepted(tmp_path: Path) -> None:
    patch = "apply_patch <<'EOF'\n" + _patch("*** Add File: a.txt", "+a") + "EOF\n"

    apply_patch(patch, _resolver(tmp_path))

    assert (tmp_path / "a.txt").read_text() == "a\n"


def test_crlf_file_keeps_its_line_endings(tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    patch = _patch("*** Update File: win.txt", "@@", " one", "-two", "+three")

    apply_patch(patch, _resolver(tmp_path))

    assert (tmp_path / "win.txt").read_bytes() == b"one\r\nthree\r\n"


def test_context_header_anchors_later_hunks(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def a():\n    return 0\n\ndef b():\n    return 0\n")
    patch = _patch("*** Update File: m.py", "@@ def b():", "-    return 0", "+    return 1")

    apply_patch(patch, _resolver(tmp_path))

    assert (tmp_path / "m.py").read_text() == "def a():\n    return 0\n\ndef b():\n    return 1\n"


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ("", "first line of the patch must be"),
        ("*** Begin Patch\n*** Add File: a\n+a\n", "last line of the patch must be"),
        (_patch(), "no file operations"),
        (_patch("*** Update File: a.txt"), "has no hunks"),
        (_patch("*** Update File: a.txt", "@@", "-a", "+b", "garbage"), "expected a .@@. hunk header"),
        (_patch("*** Add File:", "+a"), "names no file"),
    ],
    ids=["empty", "no-end-marker", "no-operations", "update-without-hunks", "stray-line", "no-path"],
)
def test_malformed_patches_are_rejected(tmp_path: Path, patch: str, fragment: str) -> None:
    with pytest.raises(PatchError, match=fragment):
        apply_patch(patch, _resolver(tmp_path))
