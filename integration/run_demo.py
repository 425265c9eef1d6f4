"""Build the example dbt project end to end on the embedded Spark (what `make demo` runs).

Runs, in this process through dbt's programmatic runner: `dbt deps` (only when the project
declares packages that are not installed yet), `dbt seed`, `dbt run` and `dbt test`, then a second
`dbt run` (the click stream is a Qbeast table with incremental_strategy='merge': it grows by
`events_increment` new ids and upserts `events_redelivered` repeated ones; the marts, one of them
a Qbeast table, are rebuilt on top; the `purchases` mart, a microbatch Qbeast model, reprocesses
the generated events' range, one commit per batch) and `dbt test`
again, with the profiles.yml that sits beside the project. Exits non-zero as soon as a step fails,
and finishes by printing where the warehouse and each table live, and how the downstream models
read the Qbeast click stream: the scan node of each one's query plan (Spark's native parquet scan
over the engine's file index, through the JVM read bridge).

Usage: python integration/run_demo.py [--project-dir DIR] [--rows N] [--increment N] [--target NAME]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

HERE = Path(__file__).resolve().parent

log = logging.getLogger("qbeast.demo")


class DemoStepFailed(RuntimeError):
    """A dbt command of the demo did not succeed."""


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--project-dir", type=Path, default=HERE,
        help="dbt project to build (default: the folder of this script); its profiles.yml is used",
    )
    parser.add_argument(
        "--rows", type=int, default=None,
        help="rows of the generated click stream (default: the project's `events_rows`, 1,000,000)",
    )
    parser.add_argument(
        "--increment", type=int, default=None,
        help="new ids the second run merges in (default: the project's `events_increment`, 100,000)",
    )
    parser.add_argument("--target", default=None, help="profile target (default: the profile's)")
    args = parser.parse_args(argv)
    for option in ("rows", "increment"):
        value = getattr(args, option)
        if value is not None and value < 1:
            parser.error(f"--{option} must be a positive integer, got {value}")
    args.project_dir = args.project_dir.resolve()
    if not (args.project_dir / "dbt_project.yml").is_file():
        parser.error(f"--project-dir {args.project_dir} has no dbt_project.yml")
    return args


def event_window(project_dir: Path) -> list[str]:
    """``--event-time-start/--event-time-end`` over the whole months of the generated events
    (``events_start`` and the 90 days after it): the range each `dbt run` of the demo
    reprocesses in its microbatch model, whatever today's date."""
    import yaml

    config = yaml.safe_load((project_dir / "dbt_project.yml").read_text())
    start = dt.date.fromisoformat(str(config["vars"]["events_start"]))
    last = start + dt.timedelta(days=90)
    end = dt.date(last.year + last.month // 12, last.month % 12 + 1, 1)
    return ["--event-time-start", start.replace(day=1).isoformat(),
            "--event-time-end", end.isoformat()]


def needs_deps(project_dir: Path) -> bool:
    """True when the project declares packages and `dbt_packages/` does not hold them yet."""
    declared = any((project_dir / name).is_file() for name in ("packages.yml", "dependencies.yml"))
    installed = project_dir / "dbt_packages"
    return declared and not (installed.is_dir() and any(installed.iterdir()))


def run_dbt(command: Sequence[str], project_dir: Path, extra: Sequence[str]) -> Any:
    """Invoke one dbt command in-process; raise DemoStepFailed unless it succeeded."""
    from dbt.cli.main import dbtRunner

    args = [*command, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir), *extra]
    started = time.monotonic()
    log.info("dbt %s ...", " ".join(command))
    result = dbtRunner().invoke(args)
    elapsed = time.monotonic() - started
    if not result.success:
        reason = f": {result.exception}" if result.exception else ""
        raise DemoStepFailed(f"`dbt {' '.join(command)}` failed after {elapsed:.0f}s{reason}")
    log.info("dbt %s ok in %.1fs", " ".join(command), elapsed)
    return result.result


def table_locations(run_results: Any) -> list[tuple[str, str, str, str]]:
    """(relation, provider, location, rows) of every relation the run built, from the catalog."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the session dbt's connections started
    rows = []
    for result in getattr(run_results, "results", []):
        node = result.node
        if getattr(node, "resource_type", None) != "model" or not getattr(node, "relation_name", None):
            continue
        # SHOW TABLE EXTENDED (what dbt-spark lists relations with) reports the provider and
        # location of Python data source tables; DESCRIBE does not.
        listing = spark.sql(f"show table extended in {node.schema} like '{node.alias}'").collect()
        info = dict(
            line.split(": ", 1) for line in listing[0].information.splitlines() if ": " in line
        ) if listing else {}
        count = spark.sql(f"select count(*) from {node.relation_name}").collect()[0][0]
        provider = info.get("Provider") or info.get("Type", "?").lower()
        rows.append((node.relation_name, provider, info.get("Location", "(view: no files)"), f"{count:,}"))
    return rows


def qbeast_scans(run_results: Any) -> list[tuple[str, str]]:
    """(model, scan node) for every model whose query reads a Qbeast model of the run.

    The plan is only planned, not run: it shows which reader Spark picked for the Qbeast table
    (``FileScan parquet ... QbeastFileIndex`` with the bridge, ``BatchScan`` with the Python data
    source), whether it is vectorized (``Batched``) and which columns it reads (``ReadSchema``).
    """
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    nodes = [r.node for r in getattr(run_results, "results", [])
             if getattr(r.node, "resource_type", None) == "model"]
    qbeast_relations = [n.relation_name for n in nodes if n.config.materialized == "qbeast"]
    scans = []
    for node in nodes:
        code = getattr(node, "compiled_code", None) or ""
        # a Qbeast model reading another one (a mart built on the click stream) is downstream too
        read = [rel for rel in qbeast_relations if rel != node.relation_name and rel in code]
        if not read:
            continue
        plan = spark.sql(code)._jdf.queryExecution().executedPlan().toString()
        for line in str(plan).splitlines():
            if "Scan" in line and any(rel.split(".")[-1] in line for rel in read):
                scans.append((node.name, _scan_summary(line.strip(" +-:*()0123456789"))))
    return scans


def _scan_summary(line: str) -> str:
    """The reader, its file index, ``Batched`` and ``ReadSchema`` of a scan node's text."""
    import re

    facts = [re.search(pattern, line) for pattern in
             (r"^(\w+ \w+ \S+)", r"Location: (\w+)", r"(Batched: \w+)", r"(ReadSchema: \S+)")]
    if not all(facts):
        return line  # another reader (the Python data source): its node as Spark prints it
    reader, index, batched, schema = (m.group(1) for m in facts)
    return f"{reader} over {index}, {batched}, {schema}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    # The demo's own steps only: the engine's progress goes to dbt's log (logs/dbt.log, at
    # debug level), and dbt prints its own lines.
    demo_log = logging.getLogger(log.name)
    previous = (demo_log.level, demo_log.propagate)
    demo_log.addHandler(handler)
    demo_log.setLevel(logging.INFO)
    demo_log.propagate = False  # a root handler (set up by a library) would print every line twice
    try:
        return _run(parse_args(argv))
    finally:  # callers in the same process (tests) get their logging back as it was
        demo_log.removeHandler(handler)
        demo_log.setLevel(previous[0])
        demo_log.propagate = previous[1]


def _run(args: argparse.Namespace) -> int:
    extra: list[str] = []
    variables = {"events_rows": args.rows, "events_increment": args.increment}
    variables = {name: value for name, value in variables.items() if value is not None}
    if variables:
        extra += ["--vars", json.dumps(variables)]
    if args.target:
        extra += ["--target", args.target]
    started = time.monotonic()
    try:
        if needs_deps(args.project_dir):
            run_dbt(["deps"], args.project_dir, [])
        run_dbt(["seed"], args.project_dir, extra)
        window = event_window(args.project_dir)
        run_dbt(["run"], args.project_dir, extra + window)
        run_dbt(["test"], args.project_dir, extra)
        # merges into the click stream, the microbatch mart replaces its months
        run_results = run_dbt(["run"], args.project_dir, extra + window)
        run_dbt(["test"], args.project_dir, extra)
    except DemoStepFailed as exc:
        print(f"demo FAILED: {exc}", file=sys.stderr)
        return 1
    locations = table_locations(run_results)
    from pyspark.sql import SparkSession

    warehouse = SparkSession.builder.getOrCreate().conf.get("spark.sql.warehouse.dir")
    print(f"\ndemo OK in {time.monotonic() - started:.0f}s")
    print(f"warehouse: {warehouse}")
    print(f"  {'relation':32s} {'format':8s} {'rows':>10s}  location")
    for relation, provider, location, count in locations:
        print(f"  {relation:32s} {provider:8s} {count:>10s}  {location}")
    print("how downstream models read the qbeast tables (scan node of their query plans):")
    for model, scan in qbeast_scans(run_results):
        print(f"  {model}: {scan}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
