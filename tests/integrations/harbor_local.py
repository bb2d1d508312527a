"""A Harbor environment without Docker, for the adapter's tests: the task's container is this
machine seen through bubblewrap, with the task folders (/app, /logs, /tests, /solution,
/installed-agent) bound from a temp folder, so Harbor's own trial runner (setup, agent,
verifier, reward) runs here. Harbor loads it by import path (`--env harbor_local:LocalEnvironment`);
it runs under Harbor's Python (tests/harbortools.py), never in the suite's.

What it does not do: build the task's Dockerfile (the "image" is this machine), switch users,
limit resources or the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path, PurePosixPath

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

TASK_ROOTS = ("app", "logs", "tests", "solution", "installed-agent")
WORKDIR = "/app"


class LocalEnvironment(BaseEnvironment):
    """This machine under bubblewrap, the task's folders in a temp folder."""

    @staticmethod
    def type() -> str:
        return "local-bwrap"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self) -> None:
        if shutil.which("bwrap") is None:
            raise FileNotFoundError("bubblewrap (bwrap) is needed for the local environment")

    async def start(self, force_build: bool) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="harbor-local-"))
        for name in TASK_ROOTS:
            (self._root / name).mkdir()
        for name in ("agent", "verifier", "artifacts"):  # (a Docker environment mounts these)
            (self._root / "logs" / name).mkdir()

    async def stop(self, delete: bool) -> None:
        if delete:
            shutil.rmtree(self._root, ignore_errors=True)

    def host_path(self, path: str) -> Path:
        """Where a path of the environment is on this machine."""
        pure = PurePosixPath(path if path.startswith("/") else f"{WORKDIR}/{path}")
        top = pure.parts[1] if len(pure.parts) > 1 else ""
        if top in TASK_ROOTS:
            return self._root.joinpath(*pure.parts[1:])
        return Path(pure)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self.host_path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, self.host_path(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.host_path(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(self.host_path(source_dir), target_dir, dirs_exist_ok=True)

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        argv = ["bwrap", *self._binds(), "--chdir", cwd or WORKDIR, "bash", "-c", command]
        process = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **self._persistent_env, **(env or {})}, start_new_session=True)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_sec)
        except TimeoutError:
            _kill(process)
            await process.communicate()
            return ExecResult(stdout="", stderr=f"timed out after {timeout_sec} s", return_code=124)
        except asyncio.CancelledError:  # Harbor's own timeout of the agent: the command dies with it
            _kill(process)
            raise
        return ExecResult(stdout=stdout.decode(errors="replace"), stderr=stderr.decode(errors="replace"),
                          return_code=process.returncode or 0)

    def _binds(self) -> list[str]:
        """An empty root holding this machine's top folders and the task's folders."""
        args = ["--die-with-parent", "--tmpfs", "/", "--proc", "/proc", "--dev-bind", "/dev", "/dev"]
        for entry in sorted(Path("/").iterdir()):
            if entry.name in ("proc", "dev", *TASK_ROOTS):
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry), str(entry)]
            elif entry.is_dir():
                args += ["--bind", str(entry), str(entry)]
        for name in TASK_ROOTS:
            args += ["--bind", str(self._root / name), f"/{name}"]
        return args


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the command's whole process group (bwrap and what runs inside)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
