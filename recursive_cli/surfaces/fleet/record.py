"""DIR/fleet.json: what `fleet resume DIR` needs to run the rest — the tasks file, the
defaults every task got, the fleet's own options. Never a key: those live only in the
environment of the process that starts the fleet."""

from __future__ import annotations

import datetime
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .tasks import TaskDefaults, TaskFileError

RECORD_FILE = "fleet.json"
RESULTS_FILE = "results.jsonl"
SESSIONS_DIR = "sessions"
LOGS_DIR = "logs"


class FleetOptions(BaseModel):
    """The fleet's own options (not a task's)."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = None
    concurrency: int | None = Field(default=None, ge=1)
    retries: int = Field(default=2, ge=0)
    max_cost: float | None = Field(default=None, gt=0)


class FleetRecord(BaseModel):
    """The content of DIR/fleet.json."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = 1
    fleet_id: str
    created: str = Field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())
    tasks_file: str
    workspace: str
    defaults: TaskDefaults
    options: FleetOptions


def default_results_dir() -> Path:
    """`./fleet-YYYYmmdd-HHMMSS`, the folder a run writes to without --results."""
    return Path(f"fleet-{datetime.datetime.now():%Y%m%d-%H%M%S}")


def write_record(folder: Path, record: FleetRecord) -> None:
    """Write fleet.json atomically (a crash leaves the old one or the new one)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".fleet-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(record.model_dump_json(indent=2) + "\n")
    os.replace(temp, folder / RECORD_FILE)


def read_record(folder: Path) -> FleetRecord:
    """DIR/fleet.json; TaskFileError (a one-line reason) when DIR holds no fleet."""
    path = folder / RECORD_FILE
    try:
        return FleetRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise TaskFileError(f"{folder} holds no fleet (no {RECORD_FILE}): start one with "
                            "`recursive fleet run TASKS.jsonl --results DIR`") from None
    except (OSError, ValidationError) as exc:
        raise TaskFileError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
