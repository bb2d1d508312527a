"""apply_patch goes through the sandbox and reports what it changed."""

from __future__ import annotations

from pathlib import Path

from recursive_cli.tools.patch import ApplyPatchTool


def test_apply_patch_adds_updates_deletes(call, workspace: Path) -> None:
    (workspace / "app.py").write_text("def main():\n    print('hi')\n")
    (workspace / "old.txt").write_text("bye\n")
    patch = (
        "*** Begin Patch\n"
        "*** Add File: docs/new.md\n+hello\n"
        "*** Update File: app.py\n@@ def main():\n-    print('hi')\n+    print('hello')\n"
        "*** Delete File: old.txt\n"
        "*** End Patch"
    )
    result = call("apply_patch", patch=patch)
    assert not result.is_error, result.content
    assert (workspace / "docs" / "new.md").read_text() == "hello\n"
    assert (workspace / "app.py").read_text() == "def main():\n    print('hello')\n"
    assert not (workspace / "old.txt").exists()
    assert result.summary == "3 files: 1 added, 1 modified, 1 deleted"


def test_apply_patch_error_is_an_error_result(call, workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-y = 1\n+y = 2\n*** End Patch"
    result = call("apply_patch", patch=patch)
    assert result.is_error
    assert (workspace / "app.py").read_text() == "x = 1\n"


def test_apply_patch_refuses_git_dir(call, workspace: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: .git/hooks/post-commit\n+rm -rf /\n*** End Patch"
    result = call("apply_patch", patch=patch)
    assert result.is_error and ".git" in result.content
    assert not (workspace / ".git").exists()


def test_apply_patch_subject_names_files() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch"
    assert ApplyPatchTool().subject({"patch": patch}) == "a.py, b.py"
