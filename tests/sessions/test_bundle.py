"""Session bundles (issue 19): `sessions export --bundle` on one RECURSIVE_HOME, `sessions
import` on another, and the session goes on there — conversation, checkpoints and all.
Session ids stay unique when many processes make them at once."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from clitools import CliResult, invoke, write_script
from fakeserver import FakeLLMServer

from recursive_cli.core.errors import BundleError
from recursive_cli.features.bundles.bundle import export_bundle, import_bundle
from recursive_cli.features.sessions import ids
from recursive_cli.features.sessions.records import SessionError, SessionExistsError, now_iso

KEY = "sk-test-secret-123456"
SCRIPT_TOOL = {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}]}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def on(home: Path, *args: str, cwd: Path | None = None) -> CliResult:
    """One `recursive` command under RECURSIVE_HOME `home`, the API key set."""
    return invoke(*args, cwd=cwd, env={"RECURSIVE_HOME": str(home), "RECURSIVE_API_KEY": KEY})


def served(server: FakeLLMServer) -> tuple[str, ...]:
    return ("--provider", "openai", "--api-base", server.openai_base_url, "-m", "fake-model")


def user_texts(request_body: dict[str, Any]) -> list[str]:
    """The user messages' text of an OpenAI request, in order."""
    texts = []
    for message in request_body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str)
                         else "".join(part.get("text", "") for part in content))
    return texts


def every_byte(bundle: Path, tmp_path: Path) -> bytes:
    """The bundle as stored, gunzipped, and every object of its checkpoints, uncompressed."""
    raw = bundle.read_bytes()
    plain = gzip.decompress(raw)
    seen = [raw, plain]
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("recursive-session/checkpoints.bundle")
        assert member is not None
        git_bundle = tmp_path / "check.bundle"
        git_bundle.write_bytes(member.read())
    repo = tmp_path / "check.git"
    env = {**os.environ, "GIT_DIR": str(repo)}
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True, env=env)
    subprocess.run(["git", "bundle", "unbundle", str(git_bundle)], check=True, env=env, capture_output=True)
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], check=True, env=env,
                             capture_output=True).stdout
    assert b"one\n" in objects  # (the snapshots really are in there)
    return b"".join(seen + [objects])


def files_under(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())


def test_a_session_moves_to_another_home_and_goes_on_there(tmp_path: Path, workspace: Path) -> None:
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    with FakeLLMServer([write("a.txt", "one\n"), {"text": "done 1"},
                        write("a.txt", "two\n"), write("b.txt", "b\n"), {"text": "done 2"}]) as server:
        first = on(home_a, "run", "first", "-C", str(workspace), *served(server), "--session-id", "mv1")
        assert first.returncode == 0, first.stderr
        second = on(home_a, "resume", "mv1", "second")
        assert second.returncode == 0, second.stderr

        bundle = tmp_path / "out" / "mv1.tar.gz"
        bundle.parent.mkdir()
        export = on(home_a, "sessions", "export", "mv1", "--bundle", str(bundle))
        assert export.returncode == 0, export.stderr
        assert export.stdout == ""
        assert len(export.stderr.splitlines()) == 1
        assert export.stderr.startswith(f"exported session mv1 to {bundle} (")
        assert KEY.encode() not in every_byte(bundle, tmp_path)
        assert sorted(p.name for p in bundle.parent.iterdir()) == ["mv1.tar.gz"]  # no temp left

        copy = tmp_path / "copy"
        shutil.copytree(workspace, copy)
        imported = on(home_b, "sessions", "import", str(bundle), "-C", str(copy))
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout == "mv1\n"
        assert "checkpoint refs" in imported.stderr

        shown = on(home_b, "sessions", "show", "mv1")
        assert shown.returncode == 0, shown.stderr
        assert "user: first" in shown.stdout and "user: second" in shown.stdout
        assert "assistant: done 2" in shown.stdout and str(copy.resolve()) in shown.stdout.splitlines()[0]
        listed = on(home_b, "sessions", "list", "-C", str(copy))
        assert listed.stdout.startswith("mv1\t")

        server.add(write("c.txt", "c\n"), {"text": "done 3"})
        before = len(server.requests)
        resumed = on(home_b, "resume", "mv1", "next", "--api-base", server.openai_base_url)  # (the bundle's is not)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "done 3\n"
        assert user_texts(server.requests[before].body) == ["first", "second", "next"]
        assert "done 2" in json.dumps(server.requests[before].body)
    assert (copy / "c.txt").read_text() == "c\n" and not (workspace / "c.txt").exists()

    turns = on(home_b, "checkpoints", "list", "mv1")
    assert turns.returncode == 0, turns.stderr
    assert [line.split("\t")[0] for line in turns.stdout.splitlines()] == ["1", "2", "3"]
    assert [line.split("\t")[3] for line in turns.stdout.splitlines()] == ["first", "second", "next"]
    diff = on(home_b, "checkpoints", "diff", "mv1", "2")
    assert "-one" in diff.stdout and "+two" in diff.stdout and "+b" in diff.stdout
    restored = on(home_b, "checkpoints", "restore", "mv1", "--turn", "2")
    assert restored.returncode == 0, restored.stderr
    assert (copy / "a.txt").read_text() == "one\n"
    assert not (copy / "b.txt").exists() and not (copy / "c.txt").exists()
    assert (workspace / "b.txt").exists()  # the original workspace is not touched
    for home in (home_a, home_b):
        assert KEY.encode() not in files_under(home)


def scripted_session(home: Path, workspace: Path, tmp_path: Path, session_id: str = "s1",
                     prompt: str = "write a", *flags: str) -> None:
    script = write_script(tmp_path / f"{session_id}.json", [SCRIPT_TOOL, {"text": "wrote a"}])
    proc = on(home, "run", prompt, "-C", str(workspace), "--provider", "scripted", "--script", str(script),
              "--session-id", session_id, *flags)
    assert proc.returncode == 0, proc.stderr


def export(home: Path, tmp_path: Path, session_id: str = "s1") -> Path:
    bundle = tmp_path / f"{session_id}.tar.gz"
    proc = on(home, "sessions", "export", session_id, "--bundle", str(bundle))
    assert proc.returncode == 0, proc.stderr
    return bundle


def test_a_key_quoted_in_the_conversation_is_redacted_from_the_bundle(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path, "leak", f"use the key {KEY} to deploy")
    assert KEY.encode() in (isolated_home / "sessions" / "leak" / "transcript.jsonl").read_bytes()
    bundle = tmp_path / "leak.tar.gz"
    proc = on(isolated_home, "sessions", "export", "leak", "--bundle", str(bundle))
    assert proc.returncode == 0, proc.stderr
    assert "warning: the files of session leak held the value of RECURSIVE_API_KEY" in proc.stderr
    assert KEY.encode() not in bundle.read_bytes() + gzip.decompress(bundle.read_bytes())
    home_b = tmp_path / "b"
    assert on(home_b, "sessions", "import", str(bundle)).returncode == 0
    shown = on(home_b, "sessions", "show", "leak")
    assert "user: use the key [redacted] to deploy" in shown.stdout


def one_error_line(proc: CliResult, code: int) -> str:
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def tar_of(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def tampered(bundle: Path) -> bytes:
    """The bundle with one byte of its transcript changed (its manifest left as it was)."""
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    name = "recursive-session/session/transcript.jsonl"
    members[name] = members[name].replace(b"write a", b"write b")
    return tar_of(members)


@pytest.mark.parametrize("damage, says", [
    ("garbage", "is not a session bundle (not a tar archive)"),
    ("truncated", "is not a whole session bundle: it is truncated or corrupt"),
    ("no manifest", "is not a session bundle (it has no manifest.json)"),
    ("tampered", "is damaged: session file transcript.jsonl differs from its manifest"),
    ("escaping", "holds a file the session folder cannot take: '../../evil'"),
])
def test_a_file_that_is_no_whole_bundle_is_refused_and_nothing_is_written(
        tmp_path: Path, workspace: Path, isolated_home: Path, damage: str, says: str) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    good = export(isolated_home, tmp_path)
    data = {
        "garbage": b"\x00not a bundle at all\n" * 50,
        "truncated": good.read_bytes()[: good.stat().st_size // 2],
        "no manifest": tar_of({"recursive-session/session/meta.json": b"{}"}),
        "tampered": tampered(good) if damage == "tampered" else b"",
        "escaping": tar_of({"recursive-session/manifest.json": json.dumps({
            "format": "recursive-session-bundle", "version": 1, "session_id": "x", "workspace": "/",
            "files": {}}).encode(), "recursive-session/session/../../evil": b"boom"}),
    }[damage]
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(data)
    home_b = tmp_path / "b"
    line = one_error_line(on(home_b, "sessions", "import", str(bad)), 1)
    assert line == f"error: {bad} {says}" or says in line
    assert not (home_b / "sessions").exists() or list((home_b / "sessions").iterdir()) == []
    assert not (tmp_path / "evil").exists()
    assert not (home_b / "checkpoints").exists()


def test_an_existing_session_is_replaced_only_with_force(tmp_path: Path, workspace: Path,
                                                        isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    bundle = export(isolated_home, tmp_path)
    script = write_script(tmp_path / "more.json", [{"text": "(replayed)"}, {"text": "(replayed)"},
                                                   write("z.txt", "z\n"), {"text": "more done"}])
    more = on(isolated_home, "resume", "s1", "more", "--provider", "scripted", "--script", str(script))
    assert more.returncode == 0, more.stderr
    line = one_error_line(on(isolated_home, "sessions", "import", str(bundle)), 1)
    assert "session s1 already exists" in line and "--force" in line
    assert "user: more" in on(isolated_home, "sessions", "show", "s1").stdout  # untouched

    lock = isolated_home / "sessions" / "s1" / "lock"  # a live process (this one) holds it
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now_iso()}))
    line = one_error_line(on(isolated_home, "sessions", "import", str(bundle), "--force"), 1)
    assert "in use" in line
    lock.unlink()

    forced = on(isolated_home, "sessions", "import", str(bundle), "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout == "s1\n" and forced.stderr.startswith("replaced session s1")
    assert "user: more" not in on(isolated_home, "sessions", "show", "s1").stdout
    turns = on(isolated_home, "checkpoints", "list", "s1").stdout.splitlines()
    assert [row.split("\t")[0] for row in turns] == ["1"]  # turn 2's refs went with the old session
    assert [p.name for p in (isolated_home / "sessions").iterdir()] == ["s1"]


def test_a_failed_import_puts_the_replaced_session_back(tmp_path: Path, workspace: Path,
                                                        isolated_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from recursive_cli.core.errors import GitCommandError
    from recursive_cli.features.bundles import bundle_import

    scripted_session(isolated_home, workspace, tmp_path)
    bundle = export(isolated_home, tmp_path)
    before = (isolated_home / "sessions" / "s1" / "transcript.jsonl").read_bytes()

    def broken(*args: object) -> None:
        raise GitCommandError("git update-ref failed (exit 128): fatal: disk full")

    monkeypatch.setattr(bundle_import, "install_session_refs", broken)
    line = one_error_line(on(isolated_home, "sessions", "import", str(bundle), "--force"), 1)
    assert line == "error: cannot import the checkpoints of session s1: git update-ref failed (exit 128): fatal: disk full"
    assert (isolated_home / "sessions" / "s1" / "transcript.jsonl").read_bytes() == before
    assert sorted(p.name for p in (isolated_home / "sessions").iterdir()) == ["s1"]
    assert not (isolated_home / "sessions" / "s1" / "lock").exists()


def test_everything_in_the_session_folder_travels_but_its_lock(tmp_path: Path, workspace: Path,
                                                              isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    jobs = isolated_home / "sessions" / "s1" / "jobs"
    jobs.mkdir()
    (jobs / "job-1.log").write_text("job output\n")
    bundle = export(isolated_home, tmp_path)
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert names[0] == "recursive-session/manifest.json"
    assert "recursive-session/session/jobs/job-1.log" in names
    assert not any(name.endswith("/lock") for name in names)  # held while exporting, never exported
    assert not (isolated_home / "sessions" / "s1" / "lock").exists()
    assert on(tmp_path / "b", "sessions", "import", str(bundle)).returncode == 0
    assert (tmp_path / "b" / "sessions" / "s1" / "jobs" / "job-1.log").read_text() == "job output\n"


def test_bundle_and_format_together_are_a_usage_error(tmp_path: Path, workspace: Path,
                                                      isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    out = tmp_path / "x.tar.gz"
    line = one_error_line(on(isolated_home, "sessions", "export", "s1", "--bundle", str(out),
                             "--format", "md"), 2)
    assert "--bundle and --format" in line and not out.exists()
    assert on(isolated_home, "sessions", "export", "s1").stdout.startswith('{"type":"session"')


def test_bad_arguments_get_one_line(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    bundle = export(isolated_home, tmp_path)
    one_error_line(on(isolated_home, "sessions", "import", str(tmp_path / "missing.tar.gz")), 2)
    one_error_line(on(isolated_home, "sessions", "import", str(bundle), "-C", str(tmp_path / "nowhere")), 2)
    one_error_line(on(isolated_home, "sessions", "export", "nosuch", "--bundle", str(tmp_path / "n")), 1)
    line = one_error_line(on(isolated_home, "sessions", "export", "s1", "--bundle",
                             str(tmp_path / "no" / "dir" / "x.tar.gz")), 1)
    assert "cannot write" in line


def test_import_binds_the_current_folder_never_the_one_the_bundle_names(
        tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    bundle = export(isolated_home, tmp_path)
    here = tmp_path / "elsewhere"
    here.mkdir()
    moved = on(tmp_path / "c", "sessions", "import", str(bundle), cwd=here)  # (its own folder exists here)
    assert moved.returncode == 0, moved.stderr
    assert (f"note: the session is bound to the current folder {here.resolve()} (it was exported from "
            f"{workspace}; --workspace DIR chooses another)") in moved.stderr
    meta = json.loads((tmp_path / "c" / "sessions" / "s1" / "meta.json").read_text())
    assert meta["workspace"] == str(here.resolve())
    header = json.loads((tmp_path / "c" / "sessions" / "s1" / "transcript.jsonl").read_text().splitlines()[0])
    assert header["workspace"] == str(here.resolve())
    assert on(tmp_path / "c", "checkpoints", "list", "s1").stdout.startswith("1\t")
    same = on(tmp_path / "b", "sessions", "import", str(bundle), "-C", str(workspace), cwd=here)
    assert same.returncode == 0 and "bound to the current folder" not in same.stderr
    assert on(tmp_path / "b", "sessions", "list", "-C", str(workspace)).stdout.startswith("s1\t")


def test_a_session_without_checkpoints_travels_too(tmp_path: Path, workspace: Path,
                                                   isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path, "plain", "write a", "--no-checkpoints")
    bundle = tmp_path / "plain.tar.gz"
    proc = on(isolated_home, "sessions", "export", "plain", "--bundle", str(bundle))
    assert proc.returncode == 0 and "no checkpoints" in proc.stderr
    with tarfile.open(bundle) as tar:
        assert "recursive-session/checkpoints.bundle" not in tar.getnames()
    imported = on(tmp_path / "b", "sessions", "import", str(bundle))
    assert imported.stdout == "plain\n" and "no checkpoints" in imported.stderr
    assert "user: write a" in on(tmp_path / "b", "sessions", "show", "plain").stdout


def test_the_bundle_goes_through_a_pipe(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    agent = [sys.executable, "-m", "recursive_cli", "sessions"]
    env_a = {**os.environ, "RECURSIVE_HOME": str(isolated_home)}
    out = subprocess.run([*agent, "export", "s1", "--bundle", "-"], env=env_a, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout[:2] == b"\x1f\x8b" and b"exported session s1 to stdout" in out.stderr
    env_b = {**os.environ, "RECURSIVE_HOME": str(tmp_path / "b")}
    back = subprocess.run([*agent, "import", "-"], env=env_b, input=out.stdout, capture_output=True, timeout=60)
    assert back.returncode == 0, back.stderr
    assert back.stdout == b"s1\n"
    junk = subprocess.run([*agent, "import", "-", "--force"], env=env_b, input=b"junk", capture_output=True,
                          timeout=60)
    assert (junk.returncode, junk.stderr) == (1, b"error: stdin is not a session bundle (not a tar archive)\n")


def test_the_library_api(tmp_path: Path, workspace: Path, isolated_home: Path) -> None:
    scripted_session(isolated_home, workspace, tmp_path)
    dest = tmp_path / "lib.tar.gz"
    assert export_bundle(isolated_home, "s1", dest) is None
    home_b = tmp_path / "b"
    assert import_bundle(home_b, dest, workspace) == "s1"
    with pytest.raises(SessionExistsError):
        import_bundle(home_b, dest)
    assert import_bundle(home_b, dest, force=True) == "s1"
    (tmp_path / "junk").write_bytes(b"junk")
    with pytest.raises(BundleError) as caught:
        import_bundle(home_b, tmp_path / "junk")
    assert isinstance(caught.value, SessionError)
    with pytest.raises(SessionError):
        export_bundle(isolated_home, "nosuch", dest)


# -- session ids --------------------------------------------------------------------------------

NEW_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{12}$")


class FrozenClock:
    """Stands in for the `datetime` module in ids.py: every id is made in the same second."""

    def __init__(self, second: str) -> None:
        import datetime

        self.timezone = datetime.timezone
        moment = datetime.datetime.strptime(second, "%Y%m%d-%H%M%S").replace(tzinfo=datetime.timezone.utc)
        outer = self

        class Frozen(datetime.datetime):
            @classmethod
            def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
                return outer.moment

        self.datetime = Frozen
        self.moment = moment

    def set(self, second: str) -> None:
        import datetime

        self.moment = datetime.datetime.strptime(second, "%Y%m%d-%H%M%S").replace(tzinfo=datetime.timezone.utc)


def test_ten_thousand_ids_in_one_second_are_distinct_and_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FrozenClock("20261129-204512")
    monkeypatch.setattr(ids, "datetime", clock)
    monkeypatch.setattr(ids, "_last", [])  # an id made earlier in this process, at a later real second
    made = [ids.new_session_id() for _ in range(10_000)]
    assert len(set(made)) == 10_000
    assert sorted(made) == made
    assert all(NEW_ID.match(session_id) and session_id.startswith("20261129-204512-") for session_id in made)
    clock.set("20261129-204513")
    later = ids.new_session_id()
    assert later.startswith("20261129-204513-") and later > made[-1]
    assert all(ids.check_session_id(i) is None for i in (made[0], "20261129-204512-3f9a1c", "parser-1"))


def test_processes_forked_in_the_same_second_make_different_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ids, "datetime", FrozenClock("20261129-204512"))
    monkeypatch.setattr(ids, "_last", [])
    ids.new_session_id()  # the parent has a sequence going in this second: children must not continue it
    readers = []
    for _ in range(4):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: 500 ids down the pipe, then out at once
            os.close(read_end)
            os.write(write_end, "\n".join(ids.new_session_id() for _ in range(500)).encode())
            os._exit(0)
        os.close(write_end)
        readers.append((pid, read_end))
    made: list[str] = []
    for pid, read_end in readers:
        with os.fdopen(read_end, "rb") as handle:
            made += handle.read().decode().split("\n")
        os.waitpid(pid, 0)
    assert len(made) == 2000 and len(set(made)) == 2000
