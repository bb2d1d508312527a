"""`recursive fleet`: many goal or run tasks at once, each the CLI itself in a Ray task.

    tasks.py     TASKS.jsonl → TaskSpec (one-line errors `TASKS.jsonl:LINE: …`)
    record.py    DIR/fleet.json: the tasks file and the fleet's options, for `fleet resume`
    worker.py    one attempt of one task, on a Ray worker: workspace, the CLI subprocess, bundles
    bundles.py   a session's bundle as bytes (a live session's from a snapshot), and back
    runner.py    the driver: Ray start, scheduling, fleet budget, retries (the only `import ray`)
    results.py   DIR/results.jsonl, outcome classes, the summary table
    progress.py  the live display on a TTY, plain lines otherwise, stream-json lines
    fleet_cmd.py the typer definitions of `fleet run`, `fleet status`, `fleet resume`
    commands.py  their work

Nothing here imports Ray at import time: `recursive --help` stays as light as before.
"""
