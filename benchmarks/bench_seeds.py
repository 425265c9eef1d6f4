"""`dbt seed` of a large CSV: the adapter's one-job loader against dbt-spark's SQL `VALUES` path.

The seed has five columns dbt types differently (integer, decimal, date, text, boolean). Each
contender loads it with ``dbt seed`` in this process, on one Spark session (started by a warm-up
seed that is not timed), with and without ``column_types``:

* **one job**: the adapter's loader (dbt/adapters/qbeast/seeds.py);
* **SQL VALUES**: dbt-spark's own ``spark__load_csv_rows``, put back by a project macro
  ``qbeast__load_csv_rows`` that calls it. It types a numeric column again for every cell (a
  scan of the column each time): without ``column_types`` its time grows with the square of
  the rows, so it is measured on ``--baseline-rows`` rows (the report says how many) and the
  figure at the full size is not measured at all.

What is timed is the whole ``dbt seed`` invocation (dbt reads the CSV into its agate table in
both). The loaded rows are counted after each load and must equal the file's.

Writes ``benchmarks/results/seeds.md`` (and prints it).
Usage: python benchmarks/bench_seeds.py [--rows N] [--baseline-rows N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import fresh_dir  # noqa: E402

TYPES = {"id": "bigint", "amount": "decimal(12,2)", "day": "date", "name": "string", "flag": "boolean"}
SQL_PATH_MACRO = """
{% macro qbeast__load_csv_rows(model, agate_table) %}
  {{ return(spark__load_csv_rows(model, agate_table)) }}
{% endmacro %}
"""


def csv_text(rows: int) -> str:
    lines = ["id,amount,day,name,flag"]
    for i in range(rows):
        lines.append(f"{i},{i % 9973}.{i % 100:02d},2026-{1 + i % 12:02d}-{1 + i % 28:02d},"
                     f"customer {i % 5000},{'true' if i % 3 else 'false'}")
    return "\n".join(lines) + "\n"


def write_project(root: Path, catalog: Path, rows: int, sql_path: bool, typed: bool) -> Path:
    (root / "seeds").mkdir(parents=True)
    (root / "macros").mkdir()
    seeds_config = {"column_types": TYPES} if typed else {}
    config = ["name: seeds_bench", "version: '1.0'", "config-version: 2", "profile: seeds_bench"]
    if seeds_config:
        config += ["seeds:", "  seeds_bench:", "    +column_types:"]
        config += [f"      {name}: '{sql_type}'" for name, sql_type in TYPES.items()]
    (root / "dbt_project.yml").write_text("\n".join(config) + "\n")
    (root / "profiles.yml").write_text(
        "seeds_bench:\n  target: dev\n  outputs:\n    dev:\n      type: qbeast\n      schema: bench\n"
        f"      threads: 1\n      catalog_dir: {catalog}\n")
    (root / "seeds" / "big.csv").write_text(csv_text(rows))
    (root / "seeds" / "warmup.csv").write_text(csv_text(10))
    if sql_path:
        (root / "macros" / "sql_path.sql").write_text(SQL_PATH_MACRO)
    return root


def seed(project: Path, select: str) -> float:
    from dbt.cli.main import dbtRunner

    started = time.perf_counter()
    result = dbtRunner().invoke(["seed", "--select", select, "--project-dir", str(project),
                                 "--profiles-dir", str(project), "--quiet"])
    seconds = time.perf_counter() - started
    if not result.success:
        raise RuntimeError(f"dbt seed {select} failed in {project}: {result.exception}")
    return seconds


def measure(rows: int, baseline_rows: int) -> List[Tuple[str, bool, int, float]]:
    """(contender, typed, rows, seconds) of each load."""
    from qbeast.spark.session import get_or_create_session

    results = []
    catalog = fresh_dir("seeds-catalog")  # one embedded catalog: one Spark session for all loads
    for typed in (True, False):
        for contender, sql_path in (("one job", False), ("SQL VALUES", True)):
            size = rows if (typed or not sql_path) else baseline_rows
            project = write_project(fresh_dir(f"seeds-{contender.replace(' ', '_')}-{typed}"),
                                    catalog, size, sql_path, typed)
            seed(project, "warmup")
            seconds = seed(project, "big")
            loaded = get_or_create_session().table("bench.big").count()
            if loaded != size:
                raise RuntimeError(f"{contender}: {loaded} rows loaded of {size}")
            results.append((contender, typed, size, seconds))
            print(f"{contender:<11} column_types={typed!s:<5} rows={size:>7}: {seconds:.1f}s",
                  flush=True)
    return results


def report(results: List[Tuple[str, bool, int, float]], rows: int) -> str:
    by: Dict[Tuple[str, bool], Tuple[int, float]] = {(c, t): (n, s) for c, t, n, s in results}
    lines = ["# `dbt seed`: one Spark job against dbt-spark's SQL VALUES", "",
             f"A {rows:,}-row CSV of five columns (integer, decimal, date, text, boolean), loaded by "
             "`dbt seed` in one process after an untimed warm-up seed; whole invocation, one run each "
             "(`benchmarks/bench_seeds.py`).", "",
             "| column_types | one job | SQL VALUES | SQL VALUES / one job |", "|---|---|---|---|"]
    for typed in (True, False):
        n_job, s_job = by[("one job", typed)]
        n_sql, s_sql = by[("SQL VALUES", typed)]
        if n_sql == n_job:
            ratio = f"{s_sql / s_job:.1f}x"
            sql_cell = f"{s_sql:.1f} s"
        else:  # measured on fewer rows: the per-row cost, not a like-for-like ratio
            ratio = (f"not measured at {n_job:,} rows; at {n_sql:,} rows it took {s_sql / s_job:.1f}x "
                     f"the one-job load of all {n_job:,}")
            sql_cell = f"{s_sql:.1f} s ({n_sql:,} rows)"
        lines.append(f"| {'yes' if typed else 'no'} | {s_job:.1f} s | {sql_cell} | {ratio} |")
    lines += ["", "Without `column_types` dbt-spark's loader types each numeric cell by scanning its "
              "whole column: its time grows with the square of the rows, which is why it is measured "
              "on fewer rows. Issue 58's goal: <= 15 s for 100,000 rows either way."]
    return "\n".join(lines) + "\n"


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--baseline-rows", type=int, default=5_000,
                        help="rows of the SQL VALUES load without column_types (quadratic)")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.baseline_rows < 1:
        parser.error("--rows and --baseline-rows must be positive integers")
    text = report(measure(args.rows, args.baseline_rows), args.rows)
    out = HERE / "results" / "seeds.md"
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
