"""The example dbt project (integration/) built on a given profile target, and what it built.

``build_and_measure`` runs ``dbt build`` (seeds and models) in-process on a copy of the project
and describes every model it materialized: row count, and for Qbeast models the revision ids and
the row count of a 10% sample. The cluster tests call it in the pytest process on the shared local session (the
embedded baseline) and, through ``python cluster_dbt.py``, in driver processes whose profile
targets a standalone master or a Spark Connect server; the results must be equal.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PROJECT = REPO_ROOT / "integration"
PROFILE = "qbeast_demo"
SCHEMA = "cluster_check"
#: Variables that keep the build quick yet give the click stream several cubes. The increment
#: of a second run (new ids; the project's 1,000 latest ids are delivered again beside them) is
#: half the first build: the project's default (100,000 new ids, for `make demo`'s million)
#: made each second run here merge 17 times the table's rows into it.
DBT_VARS = {"events_rows": 6000, "events_cube_size": 1000, "events_increment": 3000}
SAMPLE_FRACTION = 0.1
_RUN_ARTIFACTS = ("target", "logs", "dbt_packages", ".qbeast_demo", ".user.yml")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class DbtStepFailed(RuntimeError):
    """A dbt command did not succeed; the message carries dbt's own error lines."""


def copy_project(destination: Path, targets: dict[str, dict[str, Any]]) -> Path:
    """Copy the example project's sources to ``destination`` with a profiles.yml of ``targets``."""
    shutil.copytree(EXAMPLE_PROJECT, destination, ignore=shutil.ignore_patterns(*_RUN_ARTIFACTS))
    default = next(iter(targets))
    profiles = {PROFILE: {"target": default, "outputs": targets}}
    (destination / "profiles.yml").write_text(yaml.safe_dump(profiles, sort_keys=False))
    return destination


def qbeast_target(server_side_parameters: dict[str, str] | None = None,
                  **fields: Any) -> dict[str, Any]:
    """A ``type: qbeast`` target in the test schema (session method, catalog in the project,
    unless ``fields`` say otherwise)."""
    target: dict[str, Any] = {"type": "qbeast", "schema": SCHEMA, "threads": 2,
                              "catalog_dir": ".qbeast_demo", **fields}
    if server_side_parameters:
        target["server_side_parameters"] = dict(server_side_parameters)
    return target


def run_dbt(command: list[str], project_dir: Path, target: str) -> Any:
    """One dbt command in this process; raise :class:`DbtStepFailed` with dbt's messages."""
    from dbt.cli.main import dbtRunner

    messages: list[str] = []

    def collect(event: Any) -> None:
        if event.info.level in ("error", "warn"):
            messages.append(_ANSI.sub("", event.info.msg))

    args = [*command, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir),
            "--target", target, "--vars", json.dumps(DBT_VARS)]
    result = dbtRunner(callbacks=[collect]).invoke(args)
    if not result.success:
        detail = "\n".join(messages[-30:]) or repr(result.exception)
        raise DbtStepFailed(f"dbt {' '.join(command)} failed on target {target}:\n{detail}")
    return result.result


def measure(spark: Any, run_results: Any) -> dict[str, dict[str, Any]]:
    """Per built model: rows, and for Qbeast models revision ids and the sample's row count."""
    import qbeast
    from qbeast.spark.catalog import describe_location

    built: dict[str, dict[str, Any]] = {}
    for result in getattr(run_results, "results", []):
        node = result.node
        if node.resource_type != "model" or not getattr(node, "relation_name", None):
            continue
        relation = node.relation_name
        info: dict[str, Any] = {"materialized": node.config.materialized,
                                "rows": spark.table(relation).count()}
        if node.config.materialized == "qbeast":
            table = qbeast.QbeastTable.for_path(spark, describe_location(spark, relation))
            info["revision_ids"] = table.revision_ids()
            info["sample_rows"] = table.sample(SAMPLE_FRACTION).count()
        built[node.name] = info
    return built


def put_qbeast_models_at(project_dir: Path, location_root: str) -> None:
    """Give the project's Qbeast models ``+location_root`` (a bucket, say) in dbt_project.yml."""
    path = project_dir / "dbt_project.yml"
    config = yaml.safe_load(path.read_text())
    models = config["models"]["qbeast_demo"]
    models["events"] = {**models.get("events", {}), "+location_root": location_root}
    marts = models.setdefault("marts", {})
    marts["daily_category_revenue"] = {**marts.get("daily_category_revenue", {}),
                                       "+location_root": location_root}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def build_and_measure(project_dir: Path, target: str, session: Any,
                      runs: int = 1) -> dict[str, dict[str, Any]]:
    """``dbt build`` (seeds and models) on ``target``, then :func:`measure` on the adapter's session.

    ``session`` returns that session (called after the build, when the adapter has started it).
    ``runs`` > 1: that many ``dbt run`` in all, the later ones on the built tables (incremental
    models merge), measured after the last.
    """
    # The project's data tests run embedded in tests/functional; here the built tables are
    # compared directly, which keeps the three builds of a test run short.
    run_results = run_dbt(["build", "--exclude-resource-type", "test", "unit_test"], project_dir, target)
    for _ in range(runs - 1):
        run_results = run_dbt(["run"], project_dir, target)
    return measure(session(), run_results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="build the example project on one target")
    parser.add_argument("--project-dir", type=Path, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--measure-remote", help="Spark Connect URL to read the built tables "
                        "through (a method without a Spark session in dbt's process: thrift)")
    parser.add_argument("--location-root", help="put the Qbeast models there (a bucket, say)")
    parser.add_argument("--runs", type=int, default=1, help="dbt runs in all (incremental merges)")
    # A second build in the same process saves a driver start (and on a master, its executors)
    # where a test run needs both builds on one cluster.
    parser.add_argument("--then-target", help="after the build: build again on this target (its "
                        "own schema) with the Qbeast models at --then-location-root")
    parser.add_argument("--then-location-root", help="where the second build puts the Qbeast models")
    parser.add_argument("--then-runs", type=int, default=1, help="dbt runs of the second build")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.location_root:
        put_qbeast_models_at(args.project_dir, args.location_root)
    profiles = yaml.safe_load((args.project_dir / "profiles.yml").read_text())
    target = profiles[PROFILE]["outputs"][args.target]
    params = dict(target.get("server_side_parameters", {}))
    if target.get("method") == "connect":  # the profile's Spark Connect URL
        params["spark.remote"] = target["host"]
    if args.measure_remote:
        params = {"spark.remote": args.measure_remote}

    def session() -> Any:
        from qbeast.spark.session import get_or_create_session

        # The adapter's session is running: this returns it (and applies no new static setting).
        return get_or_create_session(params)

    started = time.monotonic()
    out: dict[str, Any] = {"models": build_and_measure(args.project_dir, args.target, session,
                                                       runs=args.runs)}
    if args.then_target:
        put_qbeast_models_at(args.project_dir, args.then_location_root)
        out["then"] = build_and_measure(args.project_dir, args.then_target, session,
                                        runs=args.then_runs)
    out["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
