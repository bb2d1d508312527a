"""read_file, write_file and edit_file on real files."""

from __future__ import annotations

from pathlib import Path


def test_read_file_numbers_lines(call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\ngamma\n")
    result = call("read_file", path="a.txt")
    assert not result.is_error
    assert result.content == "     1\talpha\n     2\tbeta\n     3\tgamma"


def test_read_file_offset_and_limit(call, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 51)))
    result = call("read_file", path="n.txt", offset=10, limit=3)
    lines = result.content.splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "offset=13" in result.content
    assert "line 13" not in result.content


def test_read_file_default_limit_is_2000_lines(call, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x\n" * 2500)
    result = call("read_file", path="big.txt")
    assert "  2000\tx" in result.content
    assert "  2001\t" not in result.content
    assert "offset=2001" in result.content


def test_read_file_cuts_long_lines_and_caps_size(call, ctx, workspace: Path) -> None:
    (workspace / "wide.txt").write_text("y" * 5000 + "\nshort\n")
    result = call("read_file", path="wide.txt")
    first = result.content.splitlines()[0]
    assert len(first) < 2100 and "cut at 2000" in first
    (workspace / "huge.txt").write_text(("z" * 100 + "\n") * 1500)
    result = call("read_file", path="huge.txt")
    assert len(result.content) <= ctx.output_limit
    assert "continues after line" in result.content


def test_read_file_offset_past_end(call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = call("read_file", path="a.txt", offset=5)
    assert result.is_error and "2 lines" in result.content


def test_read_file_refuses_binary_and_directories(call, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"PK\x03\x04\x00\x00binary")
    result = call("read_file", path="blob.bin")
    assert result.is_error and "binary" in result.content
    (workspace / "pkg").mkdir()
    result = call("read_file", path="pkg")
    assert result.is_error and "list_dir" in result.content
    result = call("read_file", path="missing.txt")
    assert result.is_error and "does not exist" in result.content


def test_read_file_bad_arguments(call, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n")
    result = call("read_file", path="a.txt", offset=0)
    assert result.is_error and "offset" in result.content


def test_write_file_creates_parents(call, workspace: Path) -> None:
    result = call("write_file", path="deep/er/new.txt", content="a\nb\n")
    assert not result.is_error
    assert (workspace / "deep" / "er" / "new.txt").read_text() == "a\nb\n"
    assert "new file" in result.summary


def test_write_file_overwrite_summary(call, workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\nb\nc\n")
    result = call("write_file", path="f.txt", content="a\nB\nc\nd\n")
    assert result.summary == "+2 −1"
    assert (workspace / "f.txt").read_text() == "a\nB\nc\nd\n"


def test_write_file_keeps_exact_content(call, workspace: Path) -> None:
    call("write_file", path="crlf.txt", content="x\r\ny")
    assert (workspace / "crlf.txt").read_bytes() == b"x\r\ny"


def test_edit_file_replaces_unique_match(call, workspace: Path) -> None:
    (workspace / "m.py").write_text("def f():\n    return 1\n")
    result = call("edit_file", path="m.py", old_string="return 1", new_string="return 2\n    # two")
    assert not result.is_error, result.content
    assert (workspace / "m.py").read_text() == "def f():\n    return 2\n    # two\n"
    assert result.summary == "+2 −1"


def test_edit_file_requires_unique_match(call, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\ny = 1\nz = 1\n")
    result = call("edit_file", path="m.py", old_string="= 1", new_string="= 2")
    assert result.is_error and "3 times" in result.content
    assert (workspace / "m.py").read_text() == "x = 1\ny = 1\nz = 1\n"
    result = call("edit_file", path="m.py", old_string="= 1", new_string="= 2", replace_all=True)
    assert not result.is_error
    assert (workspace / "m.py").read_text() == "x = 2\ny = 2\nz = 2\n"
    assert "3 occurrences" in result.content


def test_edit_file_missing_and_identical(call, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\n")
    result = call("edit_file", path="m.py", old_string="nope", new_string="y")
    assert result.is_error and "not found" in result.content
    result = call("edit_file", path="m.py", old_string="x", new_string="x")
    assert result.is_error and "identical" in result.content
    result = call("edit_file", path="m.py", old_string="", new_string="y")
    assert result.is_error
    result = call("edit_file", path="absent.py", old_string="a", new_string="b")
    assert result.is_error and "does not exist" in result.content


def test_edit_file_keeps_crlf_line_endings(call, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = call("edit_file", path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert not result.is_error, result.content
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_read_file_with_one_enormous_line(call, workspace: Path) -> None:
    (workspace / "min.js").write_text("a" * 3_000_000 + "\nsecond\n")
    result = call("read_file", path="min.js")
    lines = result.content.splitlines()
    assert lines[0].startswith("     1\taaaa") and "cut at 2000" in lines[0]
    assert lines[1] == "     2\tsecond"
