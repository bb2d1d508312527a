"""A session's checkpoints as one `git bundle` file: written from one shadow repository, read
into another (the session bundles of `sessions export --bundle` and `sessions import`).

The bundle holds every ref under `refs/recursive/<session>/` (repo.py names them) and all the
history they reach, with no prerequisites, so the receiving repository needs nothing else.
Reading it is `git bundle unbundle` (objects only, no ref is touched) and then one ref
transaction, so the session's refs change all at once or not at all.
"""

from __future__ import annotations

from pathlib import Path

from . import CheckpointError
from .git import ShadowGit
from .repo import session_refs


def session_ref_map(git: ShadowGit, session_id: str) -> dict[str, str]:
    """The session's refs in this shadow repository (name → commit); {} when it has none."""
    if not (git.git_dir / "HEAD").is_file():
        return {}
    out = git.run("for-each-ref", "--format=%(refname) %(objectname)",
                  session_refs(session_id).rstrip("/"), bare=True).decode()
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def bundle_session_refs(git: ShadowGit, session_id: str, dest: Path) -> int:
    """Write the session's refs and their history to the bundle file `dest`; returns how many
    refs it holds (0, and no file written, when the session has no checkpoints)."""
    refs = session_ref_map(git, session_id)
    if refs:
        git.run("bundle", "create", "--quiet", str(dest), *sorted(refs), bare=True)
    return len(refs)


def unbundle_session_refs(git: ShadowGit, bundle: Path, session_id: str) -> dict[str, str]:
    """Store the objects of a bundle written by `bundle_session_refs` in this repository and
    return the refs it names (name → commit); no ref is changed. CheckpointError when the
    file is no such bundle or names refs of another session."""
    prefix = session_refs(session_id)
    heads = _ref_lines(git.run("bundle", "list-heads", str(bundle), bare=True))
    strangers = [ref for ref in heads if not ref.startswith(prefix)]
    if not heads or strangers:
        what = f"refs outside {prefix} ({strangers[0]})" if strangers else "no refs"
        raise CheckpointError(f"the checkpoints bundle holds {what}")
    stored = _ref_lines(git.run("bundle", "unbundle", str(bundle), bare=True))
    if stored != heads:
        raise CheckpointError("the checkpoints bundle changed while it was read")
    return heads


def install_session_refs(git: ShadowGit, session_id: str, refs: dict[str, str]) -> None:
    """Make `refs` the session's refs here, in one transaction: any other ref the session had
    in this repository is deleted. git refuses a ref whose commit it does not hold."""
    stale = [ref for ref in session_ref_map(git, session_id) if ref not in refs]
    lines = [f"update {ref} {commit}" for ref, commit in sorted(refs.items())]
    lines += [f"delete {ref}" for ref in stale]
    if lines:
        git.run("update-ref", "--stdin", input=("\n".join(lines) + "\n").encode(), bare=True)


def delete_session_refs(git: ShadowGit, session_id: str) -> None:
    """Delete every ref of the session in this repository (its objects stay until git gc)."""
    install_session_refs(git, session_id, {})


def _ref_lines(out: bytes) -> dict[str, str]:
    """`<commit> <ref>` lines (as `git bundle list-heads` and `unbundle` print them) as a map."""
    found: dict[str, str] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        commit, _, ref = line.strip().partition(" ")
        if ref:
            found[ref] = commit
    return found
