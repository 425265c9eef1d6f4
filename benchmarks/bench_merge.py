"""Upsert cost: ``QbeastTable.merge`` against ``deltalake``'s ``DeltaTable.merge`` on a Z-ordered copy.

The question a dbt user asks before choosing ``incremental_strategy='merge'`` on a Qbeast model:
how many bytes does a small upsert rewrite, and how long does it take, compared with the Delta
table they would otherwise keep clustered with Z-order? Both tables hold the same generated rows
(``datasets.generate``), Qbeast indexed on ``x, y, z``, Delta Z-ordered on ``x, y, z`` with files
of about the same size. Each merge changes 1% of the table (0.01% in the ``small`` case): half
updates (existing ids, a new ``value``; the indexed columns keep their values) and half inserts
(new ids, fresh points). Three sources:

* ``scattered``: the updated ids are drawn uniformly: the updates touch most files of any layout
  clustered by ``x, y, z`` (ids are unrelated to it);
* ``clustered``: the updated rows are those of one corner of the ``x, y, z`` space (late
  corrections of one region): a layout clustered by those columns rewrites few files;
* ``small``: 0.01% of the table, the updated ids drawn uniformly (an hourly upsert of a few
  rows): what a merge costs when there is almost nothing to do.

Every merge starts from a fresh copy of the table; contenders alternate. Bytes rewritten are the
sizes of the files the merge commit removes (read from each table's Delta log the same way),
bytes written the sizes it adds. The report (``benchmarks/results/merge.md``) gives the ratios
qbeast / deltalake; above 1 means qbeast costs more.

Run: ``.venv/bin/python benchmarks/bench_merge.py --rows 4000000 40000000`` (both sizes the issue
asks for, one report; ``--rows 400000`` for a quick run).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from datasets import generate  # noqa: E402
from measure import fresh_dir, machine_facts, median, spark_session  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.merge")
COLUMNS = ("x", "y", "z")


#: The share of the table each source upserts.
FRACTIONS = {"scattered": 0.01, "clustered": 0.01, "small": 0.0001}


def make_source(data_rows: int, kind: str, seed: int, table: pa.Table) -> pa.Table:
    """``FRACTIONS[kind]`` of ``data_rows``: half updates of existing rows (new value), half new
    rows."""
    rng = np.random.default_rng(seed)
    half = max(1, round(data_rows * FRACTIONS[kind] / 2))
    if kind in ("scattered", "small"):
        picked = rng.choice(table.num_rows, size=half, replace=False)
    else:  # the rows nearest the origin of the x, y, z space
        distance = (np.asarray(table["x"]) ** 2 + np.asarray(table["y"]) ** 2
                    + np.asarray(table["z"]) ** 2)
        picked = np.argpartition(distance, half)[:half]
    updates = table.take(pa.array(np.sort(picked)))
    updates = updates.set_column(updates.schema.get_field_index("value"), "value",
                                 pa.array(rng.normal(100.0, 20.0, half)))
    inserts = pa.table({
        "id": pa.array(np.arange(data_rows, data_rows + half, dtype=np.int64)),
        "x": rng.random(half), "y": rng.random(half), "z": rng.random(half),
        "value": rng.normal(100.0, 20.0, half),
    })
    return pa.concat_tables([updates.select(inserts.column_names), inserts])


def last_commit_bytes(path: Path) -> tuple[int, int, int, int]:
    """(bytes removed, bytes added, files removed, files added) of the table's last commit."""
    log = sorted((path / "_delta_log").glob("*.json"))[-1]
    removed = added = n_removed = n_added = 0
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "remove" in action:
            removed += int(action["remove"].get("size") or 0)
            n_removed += 1
        elif "add" in action:
            added += int(action["add"]["size"])
            n_added += 1
    return removed, added, n_removed, n_added


def table_bytes(path: Path) -> tuple[int, int]:
    """(bytes, files) of the table's active files."""
    from qbeast.delta.log import DeltaLog

    files = DeltaLog.for_path(str(path)).snapshot().files.values()
    return sum(int(a.size) for a in files), len(files)


def merge_qbeast(spark, path: Path, source: pa.Table) -> Any:
    from qbeast.table import QbeastTable

    df = spark.createDataFrame(source)
    return QbeastTable.for_path(spark, str(path)).merge(df, on=["id"])


def merge_delta(path: Path, source: pa.Table) -> Any:
    from deltalake import DeltaTable

    return (DeltaTable(str(path)).merge(source, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all().when_not_matched_insert_all().execute())


class PhaseLog(logging.Handler):
    """The merge's own phase lines (``qbeast.operations.rowlevel``), kept per qbeast merge so the
    report can say where the seconds went."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def warm_up(spark) -> None:
    """One merge of each engine on a small table before anything is timed.

    The first merge of a process pays one-time costs the others do not: Spark's Python workers
    start and import the engine and pyarrow, the JVM compiles the paths it runs; deltalake
    loads its runtime. The rounds measure merges as a long-running session (``qbeast serve``,
    a notebook, a dbt run after its first model) pays them.
    """
    from deltalake import write_deltalake

    import qbeast

    data = generate("uniform", 100_000)
    table = data.arrow_dataset().to_table()
    source = make_source(table.num_rows, "scattered", seed=0, table=table)
    q, d = fresh_dir("merge-warm-qbeast"), fresh_dir("merge-warm-delta")
    qbeast.write(data.spark_df(spark), str(q), ",".join(COLUMNS), cube_size=5_000,
                 mode="overwrite")
    write_deltalake(str(d), table, mode="overwrite")
    began = time.perf_counter()
    merge_qbeast(spark, q, source)
    merge_delta(d, source)
    logger.info("warm-up merges done in %.1fs", time.perf_counter() - began)
    shutil.rmtree(q)
    shutil.rmtree(d)


def run(rows: int, repeat: int) -> dict[str, Any]:
    import pyarrow.dataset as ds
    from deltalake import DeltaTable, write_deltalake

    import qbeast

    spark = spark_session()
    warm_up(spark)
    data = generate("uniform", rows)
    cube_size = max(1_000, rows // 100)
    base_q = fresh_dir("merge-base-qbeast")
    base_d = fresh_dir("merge-base-delta")
    started = time.perf_counter()
    qbeast.write(data.spark_df(spark), str(base_q), ",".join(COLUMNS), cube_size=cube_size,
                 mode="overwrite")
    logger.info("qbeast table written in %.1fs", time.perf_counter() - started)
    q_bytes, q_files = table_bytes(base_q)
    write_deltalake(str(base_d), data.arrow_dataset().scanner().to_reader(), mode="overwrite")
    # Z-order files of the qbeast files' average size: both layouts have about as many files
    DeltaTable(str(base_d)).optimize.z_order(list(COLUMNS), target_size=max(1, q_bytes // q_files),
                                             max_concurrent_tasks=2)
    DeltaTable(str(base_d)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                   dry_run=False)
    d_bytes, d_files = table_bytes(base_d)
    table = ds.dataset(str(data.path)).to_table()
    results: dict[str, Any] = {
        "rows": rows, "cube_size": cube_size, "machine": machine_facts(), "rounds": repeat,
        "load_start": os.getloadavg()[0],
        "qbeast_table": {"bytes": q_bytes, "files": q_files},
        "delta_table": {"bytes": d_bytes, "files": d_files}, "cases": {},
    }
    for kind in FRACTIONS:
        source = make_source(rows, kind, seed=len(kind), table=table)
        case: dict[str, Any] = {"source_rows": source.num_rows, "qbeast": [], "delta": []}
        for round_ in range(repeat):
            order = ["qbeast", "delta"] if round_ % 2 == 0 else ["delta", "qbeast"]
            for name in order:
                base = base_q if name == "qbeast" else base_d
                work = fresh_dir(f"merge-{name}")
                shutil.copytree(base, work)
                phases = PhaseLog()
                logging.getLogger("qbeast.operations.rowlevel").addHandler(phases)
                began = time.perf_counter()
                try:
                    if name == "qbeast":
                        merge_qbeast(spark, work, source)
                    else:
                        merge_delta(work, source)
                finally:
                    logging.getLogger("qbeast.operations.rowlevel").removeHandler(phases)
                seconds = time.perf_counter() - began
                removed, added, n_removed, n_added = last_commit_bytes(work)
                case[name].append({"seconds": seconds, "bytes_removed": removed,
                                   "bytes_added": added, "files_removed": n_removed,
                                   "files_added": n_added})
                if name == "qbeast":
                    case.setdefault("qbeast_phases", []).append(phases.lines)
                shutil.rmtree(work)  # a 40M-row table's copies would fill the disk
                logger.info("%s %s round %d: %.1fs, %d files / %d bytes rewritten", kind, name,
                            round_, seconds, n_removed, removed)
        results["cases"][kind] = case
    results["load_end"] = os.getloadavg()[0]
    return results


def report(runs: list[dict[str, Any]]) -> str:
    """One section per table size, in the order run."""
    lines = [
        "# Merge (upsert of 1% and 0.01% of the table): qbeast vs deltalake on a Z-ordered copy",
        "",
        f"Generated by `benchmarks/bench_merge.py` in one run over {len(runs)} table size(s): "
        + ", ".join(f"{r['rows']:,} rows" for r in runs) + ". Goals (issue 37): at most 3x "
        "deltalake's time scattered and 2x clustered at 4M rows, 1.5x both at 40M, bytes "
        "rewritten at most deltalake's.",
        "",
    ]
    for results in runs:
        lines += _size_section(results)
    return "\n".join(lines) + "\n"


def _size_section(results: dict[str, Any]) -> list[str]:
    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b else "n/a"

    lines = [
        f"## {results['rows']:,} rows",
        "",
        f"{results['rows']:,} uniform rows "
        f"(`id, x, y, z, value`), qbeast indexed on x, y, z with cube size "
        f"{results['cube_size']:,} ({results['qbeast_table']['files']} files, "
        f"{results['qbeast_table']['bytes'] / 1e6:.1f} MB); Delta written by deltalake and "
        f"Z-ordered on x, y, z ({results['delta_table']['files']} files, "
        f"{results['delta_table']['bytes'] / 1e6:.1f} MB). Machine: "
        f"{results['machine']['cores']} cores, {results['machine']['cpu']}, deltalake "
        f"{results['machine']['deltalake']}, pyspark {results['machine']['pyspark']}, commit "
        f"{results['machine']['commit']}; the machine is shared with other sessions (1-minute "
        f"load average {results.get('load_start', float('nan')):.1f} at the start of this size, "
        f"{results.get('load_end', float('nan')):.1f} at its end), so absolute times are noisy. "
        f"Medians of {results.get('rounds', 1)} round(s) after one warm-up merge per engine "
        "(`warm_up`); ratio = qbeast / deltalake (above 1: qbeast costs more).",
        "",
        "| source | contender | seconds | files rewritten | MB rewritten | MB written |",
        "|---|---|---|---|---|---|",
    ]
    summary = []
    for kind, case in results["cases"].items():
        med = {}
        for name in ("qbeast", "delta"):
            runs = case[name]
            med[name] = {k: median([r[k] for r in runs]) for k in runs[0]}
            m = med[name]
            lines.append(f"| {kind} ({case['source_rows']:,} rows) | "
                         f"{'qbeast' if name == 'qbeast' else 'deltalake'} | {m['seconds']:.1f} | "
                         f"{m['files_removed']:.0f} | {m['bytes_removed'] / 1e6:.1f} | "
                         f"{m['bytes_added'] / 1e6:.1f} |")
        summary.append(
            f"* **{kind}**: time ratio {ratio(med['qbeast']['seconds'], med['delta']['seconds'])}, "
            f"bytes-rewritten ratio "
            f"{ratio(med['qbeast']['bytes_removed'], med['delta']['bytes_removed'])}, "
            f"bytes-written ratio {ratio(med['qbeast']['bytes_added'], med['delta']['bytes_added'])}.")
    phases = ["", "The qbeast merges' own phase lines (first timed round), where their seconds went:", ""]
    for kind, case in results["cases"].items():
        done = [line.split(": ", 1)[-1] for line in (case.get("qbeast_phases") or [[]])[0]
                if " done " in line or "finished" in line]
        phases.append(f"* {kind}: " + "; ".join(f"`{line}`" for line in done))
    return lines + [""] + summary + phases + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[4_000_000],
                        help="table sizes, each run in turn (e.g. 4000000 40000000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per case (median)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "merge.md")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("qbeast").setLevel(logging.WARNING)
    logging.getLogger("qbeast.operations.rowlevel").setLevel(logging.INFO)  # the merge's phases
    logger.setLevel(logging.INFO)
    runs = []
    for rows in args.rows:
        runs.append(run(rows, args.repeat))
        (HERE / ".data").mkdir(exist_ok=True)
        (HERE / ".data" / "results-merge.json").write_text(json.dumps(runs, indent=1))
    text = report(runs)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
