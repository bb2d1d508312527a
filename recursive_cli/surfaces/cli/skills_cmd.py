"""`recursive skills list`: every skill found, where it comes from and whether a run here
offers it (and if not, why: an untrusted workspace, `--bare`, `--no-skills`, a name taken);
a SKILL.md that cannot be used is named on stderr and makes the exit code 1.

The typer definitions are here too (registered by `register`); the skills feature is imported
only when the command runs.
"""

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...launch.options import CommonOptions, with_common_options
from ...launch.settings import command_settings

if TYPE_CHECKING:
    from ...features.skills import SkillCatalog

skills_app = typer.Typer(help="The skills the agent is offered (SKILL.md folders).", no_args_is_help=True)

COLUMNS = ("NAME", "IN FORCE", "SOURCE", "PATH", "DESCRIPTION")
DESCRIPTION_WIDTH = 72


def register(app: typer.Typer) -> None:
    """Add the `skills` command group to `app`."""
    app.add_typer(skills_app, name="skills")


@skills_app.command("list", epilog="""[b]Examples[/b]

  recursive skills list

  recursive skills list --skill ~/team-skills --json | jq -r '.[] | select(.in_force) | .name'
""")
@with_common_options
def skills_list(
    json_output: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    *,
    common: CommonOptions,
) -> None:
    """Show each skill: name, whether a run here offers it (and why not), where it comes from, its SKILL.md and description. Exit 1 when a SKILL.md cannot be used."""
    raise typer.Exit(list_command(common, json_output))


def list_command(common: CommonOptions, as_json: bool) -> int:
    """Print the skills; 1 when a SKILL.md cannot be used (each named on stderr), else 0."""
    from ...features.skills import SkillCatalog
    from ...launch.parts import run_skills

    loaded = command_settings(common)
    catalog = run_skills(loaded, quiet=True) or SkillCatalog()
    workspace = loaded.settings.workspace.expanduser().resolve()
    sys.stderr.writelines(f"warning: {problem.line()}\n" for problem in catalog.problems)
    rows = _rows(catalog, workspace)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif not catalog.entries:
        sys.stdout.write("no skills (folders: --skill DIR, ~/.recursive/skills, and the workspace's "
                         ".claude/skills and .agents/skills)\n")
    else:
        _table(rows)
        if any(row["source"] == "workspace" and not row["in_force"] and "trust" in row["reason"]
               for row in rows if row["name"] is not None):
            from ...features.trust import folder_hint

            sys.stdout.write(f"(`recursive trust {folder_hint(workspace)}` trusts the workspace's skills, "
                             "`--trust-workspace` for one run)\n")
    return 1 if catalog.problems else 0


def _rows(catalog: "SkillCatalog", workspace: Any) -> list[dict[str, Any]]:
    from ...features.skills import shown_path
    from ...features.skills.catalog import ORIGIN_NAMES

    rows: list[dict[str, Any]] = [
        {"name": entry.skill.name, "description": entry.skill.description, "in_force": entry.in_force,
         "reason": entry.reason, "source": ORIGIN_NAMES[entry.skill.origin],
         "path": shown_path(entry.skill.path, workspace)} for entry in catalog.entries]
    rows += [{"name": None, "description": None, "in_force": False, "reason": problem.reason,
              "source": ORIGIN_NAMES[problem.origin], "path": shown_path(problem.path, workspace)}
             for problem in catalog.problems]
    return rows


def _table(rows: list[dict[str, Any]]) -> None:
    """The rows with a name, as aligned columns (the description cut to fit a line)."""
    cells = [COLUMNS] + [
        (row["name"], "yes" if row["in_force"] else f"no: {row['reason']}", row["source"], row["path"],
         _cut(row["description"])) for row in rows if row["name"] is not None]
    widths = [max(len(line[column]) for line in cells) for column in range(len(COLUMNS) - 1)]
    for line in cells:
        sys.stdout.write("  ".join([*(cell.ljust(width) for cell, width in zip(line, widths)), line[-1]]).rstrip()
                         + "\n")


def _cut(text: str) -> str:
    return text if len(text) <= DESCRIPTION_WIDTH else text[:DESCRIPTION_WIDTH - 1] + "…"
