"""The sandbox keeps every path inside the workspace and the extra roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recursive_cli.core.tool import ToolError
from recursive_cli.tools.sandbox import WorkspaceSandbox


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


def test_relative_paths_resolve_inside_the_workspace(workspace: Path) -> None:
    sandbox = WorkspaceSandbox(workspace)
    assert sandbox.resolve("a/b.txt") == workspace.resolve() / "a" / "b.txt"
    assert sandbox.resolve("a/../c.txt") == workspace.resolve() / "c.txt"
    assert sandbox.resolve(str(workspace / "d.txt")) == workspace.resolve() / "d.txt"
    assert sandbox.resolve(".") == workspace.resolve()


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "a/../../outside/secret.txt"])
def test_dotdot_escapes_are_refused(workspace: Path, outside: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        WorkspaceSandbox(workspace).resolve(path)


def test_absolute_path_elsewhere_is_refused(workspace: Path, outside: Path) -> None:
    sandbox = WorkspaceSandbox(workspace)
    for path in (str(outside / "secret.txt"), "/etc/passwd", "/"):
        with pytest.raises(ToolError, match="outside the workspace"):
            sandbox.resolve(path)


def test_symlinked_file_pointing_out_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError):
        WorkspaceSandbox(workspace).resolve("link.txt")


def test_symlinked_dir_pointing_out_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    sandbox = WorkspaceSandbox(workspace)
    for path in ("linkdir", "linkdir/secret.txt", "linkdir/new.txt", "linkdir/deep/new.txt"):
        with pytest.raises(ToolError):
            sandbox.resolve(path, write=True)


def test_dangling_symlink_pointing_out_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "dangling").symlink_to(outside / "not-yet.txt")
    with pytest.raises(ToolError):
        WorkspaceSandbox(workspace).resolve("dangling", write=True)


def test_symlink_inside_the_workspace_is_allowed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real", target_is_directory=True)
    assert WorkspaceSandbox(workspace).resolve("alias/x") == workspace.resolve() / "real" / "x"


def test_nul_byte_is_refused(workspace: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        WorkspaceSandbox(workspace).resolve("a\x00b")


def test_writes_into_git_dir_are_refused_but_reads_are_not(workspace: Path) -> None:
    sandbox = WorkspaceSandbox(workspace)
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT/config"):
        with pytest.raises(ToolError, match=".git"):
            sandbox.resolve(path, write=True)
    assert sandbox.resolve(".git/config") == workspace.resolve() / ".git" / "config"
    assert sandbox.resolve(".gitignore", write=True).name == ".gitignore"


def test_extra_roots_are_allowed(workspace: Path, outside: Path) -> None:
    sandbox = WorkspaceSandbox(workspace, [outside])
    assert sandbox.resolve(str(outside / "secret.txt")) == outside.resolve() / "secret.txt"
    secret = outside.resolve() / "secret.txt"
    assert sandbox.display(secret) == secret.as_posix()
    with pytest.raises(ToolError):
        sandbox.resolve(str(outside.parent))


def test_workspace_given_through_a_symlink(tmp_path: Path, workspace: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace, target_is_directory=True)
    sandbox = WorkspaceSandbox(alias)
    assert sandbox.resolve(str(alias / "f.txt")) == workspace.resolve() / "f.txt"


def test_display_is_workspace_relative_posix(workspace: Path) -> None:
    sandbox = WorkspaceSandbox(workspace)
    assert sandbox.display(sandbox.resolve("a/b.txt")) == "a/b.txt"
    assert sandbox.display(sandbox.resolve(".")) == "."


def test_file_tools_refuse_escapes(call, workspace: Path, outside: Path) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    read = call("read_file", path="../outside/secret.txt")
    assert read.is_error and "outside the workspace" in read.content
    write = call("write_file", path="linkdir/new.txt", content="x")
    assert write.is_error
    assert not (outside / "new.txt").exists()
    patch = "*** Begin Patch\n*** Add File: linkdir/p.txt\n+x\n*** End Patch"
    assert call("apply_patch", patch=patch).is_error
    assert not (outside / "p.txt").exists()
    assert os.listdir(outside) == ["secret.txt"]
