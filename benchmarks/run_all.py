"""Run the whole benchmark suite and write ``benchmarks/REPORT.md`` and ``benchmarks/charts/``.

(Full mode writes ``REPORT-full.md`` and ``charts/full/`` beside them; smoke mode, a run check,
writes into ``.data/smoke/``.)

``make bench`` runs ``--quick`` (laptop sizes, about four minutes on two cores); ``make bench-full``
runs ``--full`` (data sets up to 20M rows, about fifteen minutes on two cores, well under the hour
it must fit in). Every figure compares the
project with a baseline measured in the same run on the same data; see ``benchmarks/README.md``.

Data sets and intermediate tables live in ``benchmarks/.data/`` (git-ignored); the raw results
of a run are kept in ``benchmarks/.data/results-<mode>.json`` so that ``report.py`` can redraw the
report without measuring again. ``--only`` runs a subset (the report then covers that subset).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from qbeast.errors import InvalidOptionError  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.run_all")

SECTIONS = ("write", "sampling", "ranges", "sql", "metadata", "optimize", "merge")


@dataclass(frozen=True)
class Settings:
    """Sizes and repetitions of one mode."""

    mode: str
    write_rows: int
    write_repeat: int
    scaling_rows: tuple[int, ...]
    range_rows: int
    range_queries: int
    read_repeat: int
    optimize_rows: int
    optimize_appends: int
    metadata_repeat: int
    merge_rows: int
    merge_repeat: int
    cube_rows_divisor: int = 100  # cube size = rows / this: about this many leaf files
    fractions: tuple[float, ...] = (0.001, 0.01, 0.1, 0.5)
    selectivities: tuple[float, ...] = (0.001, 0.01, 0.1)
    driver_memory: str = "8g"

    def cube_size(self, rows: int) -> int:
        return max(1_000, rows // self.cube_rows_divisor)


QUICK = Settings(mode="quick", write_rows=1_000_000, write_repeat=2,
                 scaling_rows=(250_000, 500_000, 1_000_000), range_rows=1_000_000, range_queries=3,
                 read_repeat=3, optimize_rows=1_000_000, optimize_appends=5, metadata_repeat=11,
                 merge_rows=500_000, merge_repeat=1)
FULL = Settings(mode="full", write_rows=20_000_000, write_repeat=3,
                scaling_rows=(1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000),
                range_rows=4_000_000, range_queries=3, read_repeat=3, optimize_rows=4_000_000,
                optimize_appends=5, metadata_repeat=11, merge_rows=4_000_000, merge_repeat=3,
                driver_memory="12g")

#: A minutes-long check that every section runs (development and CI); its numbers mean little.
SMOKE = Settings(mode="smoke", write_rows=60_000, write_repeat=1, scaling_rows=(20_000, 40_000),
                 range_rows=60_000, range_queries=1, read_repeat=1, optimize_rows=60_000,
                 optimize_appends=3, metadata_repeat=3, merge_rows=60_000, merge_repeat=1,
                 driver_memory="2g")

SQL_RANGE = ("event_time >= TIMESTAMP'2019-11-10 00:00:00' AND event_time < TIMESTAMP'2019-11-12 00:00:00'"
             " AND price < 40.0")
#: Two ranges on different indexed columns, about 7% of the rows.
SQL_OR = "event_time < TIMESTAMP'2019-11-02 00:00:00' OR price > 160.0"


def raw_path(mode: str) -> Path:
    return HERE / ".data" / f"results-{mode}.json"


def save_raw(results: dict) -> Path:
    """Write the raw results so far (``report.py <file>`` renders them, even from a partial run)."""
    path = raw_path(results["settings"]["mode"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str))
    return path


def run(settings: Settings, only: tuple[str, ...]) -> dict:
    import bench_merge
    import bench_metadata_selection
    import bench_optimize
    import bench_ranges
    import bench_sampling
    import bench_sql
    import bench_write_peers
    import datasets
    from measure import machine_facts, spark_session

    started = time.perf_counter()
    results: dict = {"settings": asdict(settings), "machine": machine_facts(),
                     "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "sections": list(only), "elapsed_s": {}, "load_average": {"start": _load()}}
    spark = spark_session(settings.driver_memory)
    ecommerce = datasets.generate("ecommerce", settings.write_rows)
    columns = datasets.RANGE_COLUMNS["ecommerce"]

    def section(name: str, action) -> None:
        if name not in only:
            return
        t0 = time.perf_counter()
        logger.info("=== %s: start (elapsed %.0fs)", name, t0 - started)
        results[name] = action()
        results["elapsed_s"][name] = time.perf_counter() - t0
        results["load_average"][name] = _load()  # 1-minute load when the section ended
        logger.info("=== %s: done in %.0fs", name, results["elapsed_s"][name])
        save_raw(results)  # an interrupted run keeps the sections it finished

    def write():
        scaling = [datasets.generate("uniform", n) for n in settings.scaling_rows]
        source_bytes = sum(Path(f).stat().st_size for f in ecommerce.files)
        target = max(256 * 1024, source_bytes // settings.cube_rows_divisor)
        return bench_write_peers.run(spark, ecommerce, datasets.generate("ecommerce", 50_000),
                                     columns, settings.cube_size(ecommerce.rows), target,
                                     settings.write_repeat, scaling)

    section("write", write)
    paths = results.get("write", {}).get("paths")
    if paths is None and ({"sampling", "sql"} & set(only)):
        # The read benchmarks need the written tables: build them once without timing.
        from measure import fresh_dir

        q, p = fresh_dir("write-qbeast-ecommerce"), fresh_dir("write-parquet-ecommerce")
        bench_write_peers.write_qbeast(spark, ecommerce, q, columns, settings.cube_size(ecommerce.rows))
        bench_write_peers.write_parquet(spark, ecommerce, p)
        paths = {"qbeast": str(q), "parquet": str(p)}
    section("sampling", lambda: bench_sampling.run(
        spark, paths["qbeast"], paths["parquet"], ecommerce.value_column, list(settings.fractions),
        settings.read_repeat))
    section("ranges", lambda: bench_ranges.run(
        spark, [datasets.generate(k, settings.range_rows) for k in ("uniform", "skewed")],
        settings.cube_size(settings.range_rows), list(settings.selectivities),
        settings.range_queries, settings.read_repeat))
    section("sql", lambda: bench_sql.run(spark, paths["qbeast"], ecommerce.value_column, SQL_RANGE,
                                         SQL_OR, settings.read_repeat))
    section("metadata", lambda: bench_metadata_selection.run(spark, settings.metadata_repeat))
    section("optimize", lambda: bench_optimize.run(
        spark, datasets.generate("uniform", settings.optimize_rows), ("x", "y"),
        settings.cube_size(settings.optimize_rows), settings.optimize_appends))
    # upserts of 1% (scattered, clustered) and 0.01% of the keys against deltalake's merge
    section("merge", lambda: bench_merge.run(settings.merge_rows, settings.merge_repeat))
    results["total_elapsed_s"] = time.perf_counter() - started
    return results


def _load() -> float | None:
    """The 1-minute load average (the benchmark's own Spark cores count), None where unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--quick", action="store_true", help="laptop sizes (about 10 minutes)")
    mode.add_argument("--full", action="store_true", help="up to 20M rows (under an hour, 2 cores)")
    mode.add_argument("--smoke", action="store_true", help="tiny sizes: checks that the suite runs")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default all: {','.join(SECTIONS)})")
    parser.add_argument("--no-report", action="store_true",
                        help="keep the raw results only (do not rewrite REPORT.md and charts)")
    args = parser.parse_args(argv)
    only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        raise InvalidOptionError(f"--only: unknown section(s) {unknown}; allowed: {', '.join(SECTIONS)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("qbeast.spark", "qbeast.delta", "qbeast.storage", "qbeast.operations", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The writer's phases (stats, estimation, write, commit) show progress inside long writes.
    logging.getLogger("qbeast.spark.write.writer").setLevel(logging.INFO)
    settings = QUICK if args.quick else FULL if args.full else SMOKE
    results = run(settings, only)
    raw = save_raw(results)
    logger.info("raw results written to %s (total %.0fs)", raw, results["total_elapsed_s"])
    if not args.no_report:
        import report

        report.render(results, HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
