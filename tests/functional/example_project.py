"""Helpers to run the example dbt project of integration/ from a throw-away copy.

Tests never build inside the repository's integration/ folder (that would leave a catalog, logs and
target/ behind): they copy the project's sources to a temporary folder first.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, List, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PROJECT = REPO_ROOT / "integration"
RUN_DEMO = EXAMPLE_PROJECT / "run_demo.py"
ANSI_CODES = re.compile(r"\x1b\[[0-9;]*m")
RUN_ARTIFACTS = ("target", "logs", "dbt_packages", ".qbeast_demo", ".user.yml")


def copy_example_project(destination: Path) -> Path:
    """Copy the example project's sources (not its run artifacts) to ``destination``."""
    shutil.copytree(EXAMPLE_PROJECT, destination, ignore=shutil.ignore_patterns(*RUN_ARTIFACTS))
    return destination


def invoke_dbt(args: Sequence[str], project_dir: Path) -> Tuple[Any, List[str]]:
    """Run dbt in-process on ``project_dir`` with its own profiles.yml; return result and messages."""
    from dbt.cli.main import dbtRunner

    messages: List[str] = []

    def collect(event: Any) -> None:
        messages.append(ANSI_CODES.sub("", event.info.msg))

    result = dbtRunner(callbacks=[collect]).invoke(
        [*args, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
    )
    return result, messages
