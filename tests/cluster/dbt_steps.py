"""Several dbt commands in one process, one after the other, as a script with ``dbtRunner`` runs them.

A dbt process spends seconds of CPU before its first statement (dbt's imports, the adapter, the
project's parse), which the cluster tests paid once per command. The tests that only need each
command's console and results run their commands through this script instead: one process per
project, and what each command printed and recorded reported apart.

    python dbt_steps.py PROJECT_DIR '[["build"], ["run-operation", "m"]]'

For each step it prints a marker line, then dbt's own console output for the step, then one
``STEP_RESULT`` line: a JSON object with ``success`` and ``nodes`` (each node's status and message
from that step's ``run_results.json``; none for a run-operation).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MARKER = "=== dbt step "
RESULT = "STEP_RESULT "


def node_results(project: Path) -> dict[str, tuple[str, str]]:
    """Each node's (status, message) of the last command's run_results.json, by name."""
    results_file = project / "target" / "run_results.json"
    nodes: dict[str, tuple[str, str]] = {}
    if results_file.exists():
        for result in json.loads(results_file.read_text())["results"]:
            name = result["unique_id"].split(".")[2]  # test ids end with a hash
            nodes[name] = (result["status"], result.get("message") or "")
    return nodes


def run_steps(project: Path, steps: list[list[str]]) -> None:
    from dbt.cli.main import dbtRunner

    for number, args in enumerate(steps):
        print(f"{MARKER}{number}: {' '.join(args)}", flush=True)
        results_file = project / "target" / "run_results.json"
        results_file.unlink(missing_ok=True)  # a step that writes none must not report the last one
        outcome = dbtRunner().invoke(["--no-use-colors", *args, "--project-dir", str(project),
                                      "--profiles-dir", str(project)])
        nodes = {} if args[0] == "run-operation" else node_results(project)
        sys.stdout.flush()
        print(RESULT + json.dumps({"success": bool(outcome.success), "nodes": nodes}), flush=True)


def parse_steps(stdout: str) -> list[tuple[bool, dict[str, tuple[str, str]], str]]:
    """(success, nodes, console text) per step from this script's output."""
    steps: list[tuple[bool, dict[str, tuple[str, str]], str]] = []
    console: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            console = []
        elif line.startswith(RESULT):
            result: dict[str, Any] = json.loads(line.removeprefix(RESULT))
            nodes = {name: (status, message) for name, (status, message) in result["nodes"].items()}
            steps.append((result["success"], nodes, "\n".join(console)))
        else:
            console.append(line)
    return steps


if __name__ == "__main__":
    run_steps(Path(sys.argv[1]), json.loads(sys.argv[2]))
