"""The session store: list, resolve, latest, remove and gc."""

from __future__ import annotations

import datetime
import os
import socket
from pathlib import Path

import pytest

from recursive_cli.core.values import dumps
from recursive_cli.features.sessions.lock import LOCK_FILE, LockInfo
from recursive_cli.features.sessions.meta import read_meta, write_meta
from recursive_cli.features.sessions.records import (
    AmbiguousSessionError,
    SessionInUseError,
    SessionNotFoundError,
    now_iso,
)


def days_ago(days: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return moment.isoformat(timespec="milliseconds")


def age(store, session_id: str, days: float) -> None:
    folder = store.folder(session_id)
    meta = read_meta(folder)
    meta.updated = days_ago(days)
    write_meta(folder, meta)


def hold(folder) -> None:
    """Lock the session as a live process (this test's own pid) would."""
    live = LockInfo(pid=os.getpid(), host=socket.gethostname(), started=now_iso())
    (folder / LOCK_FILE).write_text(dumps(live))


def test_list_sorts_by_creation_and_filters_by_workspace(new_session, store, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    new_session("b", workspace=str(ws.resolve()), created="2026-01-02T00:00:00.000+00:00")
    new_session("a", workspace=str(ws.resolve()), created="2026-01-03T00:00:00.000+00:00")
    new_session("c", workspace="/elsewhere", created="2026-01-01T00:00:00.000+00:00")
    (store.root / "junk").mkdir()
    (store.root / "broken").mkdir()
    (store.root / "broken" / "meta.json").write_text("{not json")
    assert [m.id for m in store.list()] == ["c", "b", "a"]
    assert [m.id for m in store.list(ws)] == ["b", "a"]
    assert store.list(tmp_path / "nothing-here") == []


def test_resolve_exact_prefix_ambiguous_and_not_found(new_session, store):
    for session_id in ("20260101-aaa", "20260101-aab", "20260102-ccc", "2026"):
        new_session(session_id)
    assert store.resolve("20260102-ccc") == "20260102-ccc"
    assert store.resolve("20260102") == "20260102-ccc"
    assert store.resolve("2026") == "2026"  # an exact id wins over being a prefix
    with pytest.raises(AmbiguousSessionError) as caught:
        store.resolve("20260101-aa")
    assert "20260101-aaa, 20260101-aab" in str(caught.value)
    with pytest.raises(SessionNotFoundError, match="no session matches 'zzz'"):
        store.resolve("zzz")
    with pytest.raises(SessionNotFoundError):
        store.resolve("")


def test_ambiguous_lists_at_most_ten_candidates(new_session, store):
    for i in range(12):
        new_session(f"x-{i:02d}")
    with pytest.raises(AmbiguousSessionError) as caught:
        store.resolve("x-")
    message = str(caught.value)
    assert "x-09" in message and "x-10" not in message and "and 2 more" in message


def test_latest_is_the_most_recently_updated_session_of_the_workspace(new_session, store):
    new_session("old", workspace="/ws")
    new_session("new", workspace="/ws")
    new_session("other", workspace="/other")
    age(store, "new", 2)
    age(store, "old", 1)
    assert store.latest(Path("/ws")) == "old"
    assert store.latest(Path("/none")) is None


def test_remove_deletes_and_refuses_a_live_session(new_session, store):
    new_session("s1")
    new_session("s2")
    store.remove("s1")
    assert not store.exists("s1") and not store.folder("s1").exists()
    hold(store.folder("s2"))
    with pytest.raises(SessionInUseError, match="session s2 is in use"):
        store.remove("s2")
    assert store.exists("s2")
    with pytest.raises(SessionNotFoundError):
        store.remove("never")


def test_gc_dry_run_lists_without_deleting_and_gc_deletes_only_old_ones(new_session, store):
    for session_id in ("old1", "old2", "fresh", "old-live"):
        new_session(session_id)
    for session_id in ("old1", "old2", "old-live"):
        age(store, session_id, 40)
    hold(store.folder("old-live"))
    month = 30 * 86400
    assert [m.id for m in store.gc(month, dry_run=True)] == ["old1", "old2"]
    assert store.ids() == ["fresh", "old-live", "old1", "old2"]
    assert [m.id for m in store.gc(month)] == ["old1", "old2"]
    assert store.ids() == ["fresh", "old-live"]


def test_folder_refuses_path_tricks(store):
    with pytest.raises(SessionNotFoundError, match="invalid session id"):
        store.folder("../etc")
    assert not store.exists("../etc")
