"""Headless session ids (version 7 UUIDs) and where Claude's transcript of one goes, checked
against the Agent SDK's own functions for both."""

from __future__ import annotations

import uuid
from pathlib import Path

from clitools import require

from recursive_cli.features.sessions.ids import is_uuid, new_uuid_session_id
from recursive_cli.surfaces.headless.claude_view import project_folder_name, view_path

sessions = require("claude_agent_sdk._internal.sessions")


def test_uuid_session_ids_sort_by_creation_and_are_what_the_sdk_takes() -> None:
    made = [new_uuid_session_id() for _ in range(200)]

    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(uuid.UUID(one).version == 7 and sessions._validate_uuid(one) and is_uuid(one) for one in made)
    assert not is_uuid("20261201-132028-2d090c4a81f3") and not is_uuid("bogus")


def test_the_project_folder_is_the_sdks(tmp_path: Path) -> None:
    short = tmp_path / "my project.v2"
    long = tmp_path.joinpath(*["deep-folder-name"] * 16, "ws")
    for folder in (short, long):
        folder.mkdir(parents=True)
        assert project_folder_name(folder) == sessions.project_key_for_directory(folder)
    link = tmp_path / "link"
    link.symlink_to(short)
    assert project_folder_name(link) == project_folder_name(short)  # the real path, as the SDK canonicalises


def test_the_view_is_under_claude_config_dir(tmp_path: Path) -> None:
    path = view_path(tmp_path, "0190aaaa-0000-7000-8000-000000000000", {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")})
    assert path == tmp_path / "cfg" / "projects" / project_folder_name(tmp_path) / (path.stem + ".jsonl")
    assert str(path.parent.parent) == str(sessions._get_projects_dir({"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}))


def test_a_damaged_claude_transcript_never_crashes_the_import() -> None:
    """(claude_import.py reads files other programs wrote: any JSON shape is survived.)"""
    import json
    import random

    from recursive_cli.surfaces.headless.claude_import import _entries, conversation
    from recursive_cli.tools.claude_names import ClaudeView

    rng = random.Random(35)
    values: list[object] = [None, 1, "x", [], {}, [1], {"a": 1}, True, "u1", "u2"]

    def block() -> dict[str, object]:
        return rng.choice([{"type": "tool_use", "id": rng.choice(values), "name": rng.choice(values),
                            "input": rng.choice(values)},
                           {"type": "tool_result", "tool_use_id": rng.choice(values), "content": rng.choice(values),
                            "is_error": rng.choice(values)},
                           {"type": "text", "text": rng.choice(values)}])

    for _ in range(500):
        entries = [{"uuid": rng.choice(["u1", "u2", "u3"]), "type": rng.choice(["user", "assistant", "attachment", 7]),
                    "parentUuid": rng.choice(values), "isSidechain": rng.choice([False, None, 1]),
                    "message": rng.choice([None, "s", {"id": rng.choice(values),
                                                       "content": rng.choice([*values, [block(), block()]])}])}
                   for _ in range(rng.randint(1, 6))]
        text = "\n".join(json.dumps(entry) for entry in entries) + "\n{torn"
        for _uid, message in conversation(_entries(text), ClaudeView(Path("/ws"))):
            assert message.role in ("user", "assistant", "tool")
