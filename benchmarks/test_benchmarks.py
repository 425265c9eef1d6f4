"""Checks of the benchmark suite's own logic (no Spark): data reproducibility, query boxes, the
Z-order file-skipping rule. Not part of ``make test`` (the suite lives outside ``tests/``); run
with ``.venv/bin/python -m pytest benchmarks/test_benchmarks.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ranges  # noqa: E402
import datasets  # noqa: E402
from qbeast.errors import InvalidOptionError  # noqa: E402


def _read(ds: datasets.Dataset) -> pa.Table:
    return pa.concat_tables(pq.read_table(f) for f in ds.files)


@pytest.mark.parametrize("kind", datasets.KINDS)
def test_datasets_are_reproducible_and_prefix_stable(tmp_path, kind):
    a = datasets.generate(kind, 2_500, root=tmp_path / "a", chunk_rows=1_000)
    b = datasets.generate(kind, 2_500, root=tmp_path / "b", chunk_rows=1_000)
    small = datasets.generate(kind, 1_000, root=tmp_path / "c", chunk_rows=1_000)
    assert len(a.files) == 3
    assert _read(a).equals(_read(b))
    assert _read(a).slice(0, 1_000).equals(_read(small))
    assert _read(a).num_rows == 2_500
    assert set(a.range_columns) <= set(_read(a).column_names)


def test_generate_reuses_a_complete_data_set_and_rejects_bad_input(tmp_path):
    first = datasets.generate("uniform", 500, root=tmp_path, chunk_rows=1_000)
    mtime = Path(first.files[0]).stat().st_mtime_ns
    datasets.generate("uniform", 500, root=tmp_path, chunk_rows=1_000)
    assert Path(first.files[0]).stat().st_mtime_ns == mtime
    with pytest.raises(InvalidOptionError, match="uniform, skewed, ecommerce"):
        datasets.generate("gaussian", 10, root=tmp_path)
    with pytest.raises(InvalidOptionError, match="positive integer"):
        datasets.generate("uniform", 0, root=tmp_path)


def test_boxes_hit_the_target_selectivity_on_independent_columns():
    rng = np.random.default_rng(5)
    values = {"x": rng.random(200_000), "y": rng.random(200_000), "z": rng.random(200_000)}
    for dims in (2, 3):
        sub = {c: values[c] for c in "xyz"[:dims]}
        for target in (0.01, 0.1):
            for box in bench_ranges._boxes(sub, target, 3, seed=1):
                achieved = bench_ranges._qualifying(sub, box) / 200_000
                assert target * 0.6 < achieved < target * 1.4, (dims, target, box, achieved)


def test_qualifying_counts_inclusive_bounds():
    values = {"a": np.array([1, 2, 3, 4, 5]), "b": np.array([5.0, 4.0, 3.0, 2.0, 1.0])}
    box = {"a": (2, 4), "b": (3.0, 4.0)}
    brute = sum(1 for a, b in zip(values["a"], values["b"]) if 2 <= a <= 4 and 3.0 <= b <= 4.0)
    assert bench_ranges._qualifying(values, box) == brute == 2


def test_zorder_file_selection_keeps_every_file_with_matching_rows(tmp_path):
    from deltalake import write_deltalake

    rng = np.random.default_rng(9)
    for i in range(6):  # six files, each covering its own band of x
        x = rng.uniform(i, i + 1, 100)
        write_deltalake(str(tmp_path), pa.table({"x": x, "y": rng.random(100)}), mode="append")
    files = bench_ranges.ZorderFiles(str(tmp_path))
    box = {"x": (1.5, 3.2), "y": (0.0, 1.0)}
    paths, size = files.select(box)
    must = []
    for path in files.actions["path"].to_pylist():
        t = pq.read_table(f"{tmp_path}/{path}")
        if bench_ranges._qualifying({c: t[c].to_numpy() for c in "xy"}, box):
            must.append(f"{tmp_path}/{path}")
    assert sorted(paths) == sorted(must) and len(paths) == 3
    assert size == sum(Path(p).stat().st_size for p in paths)
    assert files.deltalake_count(box) == len(paths)


def test_a_missing_extension_wheel_is_named_with_its_fix():
    with pytest.raises(RuntimeError, match=r"duckdb-extension-nothing package \(the bench extra\)"):
        datasets._duckdb_extension("duckdb_extension_nothing", "nothing")


def test_timestamp_literals_name_the_exact_instant():
    import duckdb

    import bench_layout

    for micros in (0, 1_572_566_400_000_123, 1_575_158_399_999_999):
        literal = bench_layout.timestamp_literal(micros)
        assert duckdb.sql(f"SELECT epoch_us({literal})").fetchone()[0] == micros, literal
    sql = bench_layout.box_sql({"event_time": (5, 7), "user_id": (1, 2)}, {"event_time"})
    assert sql == ("event_time BETWEEN TIMESTAMP'1970-01-01 00:00:00.000005' AND "
                   "TIMESTAMP'1970-01-01 00:00:00.000007' AND user_id BETWEEN 1 AND 2")


def test_write_time_is_the_best_of_the_full_run_and_the_write_rounds():
    import bench_layout

    results = {"today": {"sets": [{"name": "uniform", "write_s": 3.0, "write_times": [3.0, 3.4]}]},
               "write_rounds": [{"branch": {"uniform": 2.9}, "today": {"uniform": 2.7}},
                                {"today": {"uniform": 3.1}, "branch": {"uniform": 3.3}}]}
    today = results["today"]["sets"][0]
    assert bench_layout._best_write(results, "today", "uniform", today) == 2.7
    assert bench_layout._best_write(results, "branch", "uniform", {"write_s": 3.2}) == 2.9
    assert bench_layout._write_samples(results) == 6
    # the incremental scenario: its appends plus its maintenance, the best of its runs
    incremental = {"write_s": 16.0, "maintenance_s": 4.0}
    assert bench_layout._best_write(results, "today", "incremental (30 appends)", incremental) == 20.0
    results["write_rounds"][1]["today"]["incremental"] = 18.5
    assert bench_layout._best_write(results, "today", "incremental (30 appends)", incremental) == 18.5
    assert bench_layout._best_write(results, "branch", "incremental (30 appends)", incremental) == 20.0
    # results from before the write rounds existed render with the full run's writes only
    del results["write_rounds"]
    assert bench_layout._best_write(results, "today", "uniform", today) == 3.0
    assert bench_layout._write_samples(results) == 2


def test_report_header_names_a_dirty_tree_and_the_load():
    import bench_layout

    assert bench_layout._short("0123456789abcdef+dirty") == "01234567+dirty"
    assert bench_layout._short("0123456789abcdef") == "01234567"
    assert bench_layout._load({"load_average": [0.25, 2.04]}) == (
        "; 1-minute load average 0.2 at the start and 2.0 at the end "
        "(about 2 is the benchmark's own Spark work)")
    assert bench_layout._load({}) == ""


def test_tie_spread_is_the_binomial_one_for_unique_keys_and_matches_tied_draws():
    import numpy as np

    import bench_layout

    rows, f = 40_000, 0.1
    assert bench_layout.tie_spread(rows, rows, f) == pytest.approx(np.sqrt((1 - f) / (f * rows)))
    # 3,000 groups of 12 rows (TPC-DS tickets share their keys) and one group of 4,000 (nulls)
    sizes = np.array([12] * 3_000 + [4_000])
    n = int(sizes.sum())
    predicted = bench_layout.tie_spread(int((sizes * sizes).sum()), n, f)
    rng = np.random.default_rng(7)
    counts = np.array([sizes[rng.random(sizes.size) < f].sum() for _ in range(4_000)])
    measured = counts.std() / (f * n)
    assert measured == pytest.approx(predicted, rel=0.05)
    assert predicted > 5 * bench_layout.tie_spread(n, n, f)
