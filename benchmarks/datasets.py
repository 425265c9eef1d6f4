"""Reproducible benchmark data sets, generated with numpy and stored as parquet under ``.data/``.

Why numpy and parquet files rather than ``spark.range`` expressions: every contender (Spark's
parquet writer, ``qbeast.write``, ``deltalake``) must consume the *same* rows, and ``deltalake``
does not read Spark DataFrames. A data set is a folder of parquet chunks of at most
``CHUNK_ROWS`` rows; chunk ``i`` of a data set is always generated from the seed ``(SEED, kind,
i)``, so the same size gives the same bytes on every machine and the first ``k`` chunks of a big
set equal the chunks of a smaller one (with the same chunk size).

Three shapes:

* ``uniform``: ``x, y, z`` uniform in [0, 1), ``value`` normal(100, 20): the easy case for any
  multidimensional layout.
* ``skewed``: ``x`` Zipf(1.3) integers capped at 10^6, ``y`` log-normal(0, 1.5), ``z`` Pareto(1.2);
  most rows sit in a tiny corner of each column's [min, max] range, the hard case for an index
  whose transformation is linear in the value.
* ``ecommerce``: the shape of the public "eCommerce behavior data" set (the v07-ecommerce fixture of
  qbeast-spark): one month of events with a daily cycle, skewed user and product popularity, a
  price per product, Zipf brands and a few event types.
"""
from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.errors import InvalidOptionError

logger = logging.getLogger("qbeast.benchmarks.datasets")

HERE = Path(__file__).resolve().parent
DATA_ROOT = HERE / ".data"
SEED = 20_240_901
CHUNK_ROWS = 1_000_000
KINDS = ("uniform", "skewed", "ecommerce")
_MARKER = "_GENERATED.json"

#: Numeric columns a data set offers for indexing and range queries, in index order.
RANGE_COLUMNS = {"uniform": ("x", "y", "z"), "skewed": ("x", "y", "z"),
                 "ecommerce": ("event_time", "user_id", "price"),
                 "tpcds": ("ss_cdemo_sk", "ss_hdemo_sk"), "daily": ("event_time", "user_id")}
#: The numeric column whose average the sampling benchmark estimates.
VALUE_COLUMN = {"uniform": "value", "skewed": "value", "ecommerce": "price",
                "tpcds": "ss_net_paid", "daily": "price"}

_EVENT_TYPES = np.array(["view", "cart", "purchase", "remove_from_cart"])
_EVENT_P = np.array([0.90, 0.055, 0.03, 0.015])
_CATEGORIES = np.array([
    "electronics.smartphone", "electronics.audio.headphone", "computers.notebook",
    "appliances.kitchen.refrigerators", "apparel.shoes", "furniture.living_room.sofa",
    "construction.tools.drill", "kids.toys", "sport.bicycle", "auto.accessories.player", "",
])
_MONTH_START_US = 1_572_566_400_000_000  # 2019-11-01T00:00:00Z
_MONTH_US = 30 * 86_400 * 1_000_000


@dataclass(frozen=True)
class Dataset:
    """A generated data set on disk."""

    kind: str
    rows: int
    path: Path

    @property
    def files(self) -> list[str]:
        return sorted(str(p) for p in self.path.glob("part-*.parquet"))

    @property
    def range_columns(self) -> tuple[str, ...]:
        return RANGE_COLUMNS[self.kind]

    @property
    def value_column(self) -> str:
        return VALUE_COLUMN[self.kind]

    def arrow_dataset(self):
        """The chunks as one ``pyarrow.dataset`` (streamed by ``deltalake`` writes)."""
        import pyarrow.dataset as ds

        return ds.dataset(self.files, format="parquet")

    def spark_df(self, spark):
        """The chunks as a Spark DataFrame (native parquet scan)."""
        return spark.read.parquet(*self.files)


def _rng(kind: str, chunk: int) -> np.random.Generator:
    return np.random.default_rng([SEED, KINDS.index(kind), chunk])


def _uniform(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "x": rng.random(n), "y": rng.random(n), "z": rng.random(n),
        "value": rng.normal(100.0, 20.0, n),
    })


def _skewed(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    x = np.minimum(rng.zipf(1.3, n), 1_000_000).astype(np.int64)
    y = rng.lognormal(0.0, 1.5, n)
    z = rng.pareto(1.2, n)
    # The averaged value depends on x, so a sample that over-represents a region of x is biased.
    value = 50.0 + 10.0 * np.log1p(x) + rng.normal(0.0, 5.0, n)
    return pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64)),
                     "x": x, "y": y, "z": z, "value": value})


def _ecommerce(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    day = rng.integers(0, 30, n)
    # Daily cycle: hours drawn from a curve peaking in the evening.
    hour_weights = 1.0 + np.sin((np.arange(24) - 14) / 24 * 2 * np.pi)
    hour = rng.choice(24, n, p=hour_weights / hour_weights.sum())
    within = rng.integers(0, 3_600_000_000, n)
    event_time = _MONTH_START_US + day * 86_400_000_000 + hour * 3_600_000_000 + within
    product = np.minimum(rng.zipf(1.15, n), 200_000).astype(np.int64)
    # A fixed price per product (a deterministic function of its id), log-normal across products.
    price = np.round(np.exp(2.5 + 1.3 * np.sin(product * 12.9898) ** 2 * 2.0), 2)
    brand_rank = np.minimum(rng.zipf(1.4, n), 800)
    brand = np.char.add("brand-", brand_rank.astype(str))
    user = (500_000_000 + np.minimum(rng.zipf(1.1, n), 5_000_000) * 97 % 90_000_000).astype(np.int32)
    return pa.table({
        "event_time": pa.array(event_time.astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
        "event_type": pa.array(_EVENT_TYPES[rng.choice(4, n, p=_EVENT_P)]),
        "product_id": pa.array((1_000_000 + product).astype(np.int32)),
        "category_code": pa.array(_CATEGORIES[product % len(_CATEGORIES)]),
        "brand": pa.array(brand),
        "price": pa.array(price),
        "user_id": pa.array(user),
        "user_session": pa.array(start + np.arange(n, dtype=np.int64) // 7),
    })


_GENERATORS = {"uniform": _uniform, "skewed": _skewed, "ecommerce": _ecommerce}


def generate(kind: str, rows: int, root: Path = DATA_ROOT, chunk_rows: int = CHUNK_ROWS) -> Dataset:
    """The data set ``kind`` with ``rows`` rows, generated once and reused while it is complete."""
    if kind not in _GENERATORS:
        raise InvalidOptionError(f"data set kind {kind!r} is unknown; allowed: {', '.join(KINDS)}")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0:
        raise InvalidOptionError(f"data set rows must be a positive integer, got {rows!r}")
    path = root / "datasets" / f"{kind}-{rows}"
    manifest = {"kind": kind, "rows": rows, "seed": SEED, "chunk_rows": chunk_rows}
    marker = path / _MARKER
    if marker.exists() and json.loads(marker.read_text()) == manifest:
        return Dataset(kind, rows, path)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    started = time.perf_counter()
    for chunk, start in enumerate(range(0, rows, chunk_rows)):
        n = min(chunk_rows, rows - start)
        table = _GENERATORS[kind](_rng(kind, chunk), start, n)
        pq.write_table(table, path / f"part-{chunk:05d}.parquet", row_group_size=256 * 1024)
    marker.write_text(json.dumps(manifest))
    logger.info("generated data set %s: rows=%d files=%d elapsed=%.1fs", kind, rows,
                len(list(path.glob('part-*.parquet'))), time.perf_counter() - started)
    return Dataset(kind, rows, path)


# -- data sets of the index-effectiveness benchmark (bench_layout.py) ------------------------------


def _duckdb_extension(module: str, name: str) -> Path:
    """The ``<name>.duckdb_extension`` file of an extension wheel, for the installed duckdb."""
    import importlib.resources

    import duckdb

    try:
        package = importlib.resources.files(module)
    except ModuleNotFoundError:
        wheel = module.replace("_", "-")
        raise RuntimeError(f"the {name} data needs the {wheel} package (the bench extra): run "
                           "`make bench`, or `pip install -e '.[bench]'` in the venv") from None
    root = Path(str(package)) / "extensions"
    exact = root / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(root.glob(f"*/{name}.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"no {name}.duckdb_extension below {root}; install the bench extra")
    return found[-1]


def tpcds_store_sales(scale_factor: int = 1, root: Path = DATA_ROOT) -> Dataset:
    """TPC-DS ``store_sales`` at ``scale_factor``, generated by DuckDB's ``tpcds`` extension.

    The extension comes from the ``duckdb-extension-tpcds`` wheel (the ``bench`` extra), loaded
    from its file as the interop tests load the delta extension: no network. Rows are written in
    the generator's order as parquet chunks of ``CHUNK_ROWS`` rows (SF1: 2,880,404 rows).
    """
    import duckdb

    path = root / "datasets" / f"tpcds-store_sales-sf{scale_factor}"
    manifest = {"kind": "tpcds-store_sales", "scale_factor": scale_factor, "chunk_rows": CHUNK_ROWS}
    marker = path / _MARKER
    if marker.exists() and json.loads(marker.read_text()) == manifest:
        return Dataset("tpcds", json.loads((path / "_ROWS").read_text()), path)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    started = time.perf_counter()
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    try:
        con.execute(f"LOAD '{_duckdb_extension('duckdb_extension_tpcds', 'tpcds')}'")
        con.execute(f"CALL dsdgen(sf={int(scale_factor)})")
        reader = con.execute("SELECT * FROM store_sales").fetch_record_batch(CHUNK_ROWS)
        rows = 0
        for chunk, batch in enumerate(_rechunk(reader, CHUNK_ROWS)):
            pq.write_table(batch, path / f"part-{chunk:05d}.parquet", row_group_size=256 * 1024)
            rows += batch.num_rows
    finally:
        con.close()
    (path / "_ROWS").write_text(json.dumps(rows))
    marker.write_text(json.dumps(manifest))
    logger.info("generated TPC-DS store_sales sf=%d: rows=%d elapsed=%.1fs", scale_factor, rows,
                time.perf_counter() - started)
    return Dataset("tpcds", rows, path)


def _rechunk(reader, rows: int):
    """Tables of ``rows`` rows (the last one shorter) from a record batch reader."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in reader:
        pending.append(batch)
        size += batch.num_rows
        if size >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, size = list(rest.to_batches()), rest.num_rows
    if size:
        yield pa.Table.from_batches(pending)


def daily_events(days: int, rows_per_day: int, root: Path = DATA_ROOT) -> list[Dataset]:
    """``days`` data sets of ``rows_per_day`` ecommerce events, day ``d``'s times all in day ``d``.

    The incremental scenario of an append-per-day dbt model: every append's ``event_time`` range
    lies after the previous one's, so an index on ``event_time`` sees its domain grow each day.
    Day ``d`` is the ``ecommerce`` generator's chunk with the day forced to ``d`` (the other
    columns keep their skew).
    """
    out = []
    for day in range(days):
        path = root / "datasets" / f"daily-{rows_per_day}" / f"day-{day:03d}"
        manifest = {"kind": "daily", "day": day, "rows": rows_per_day, "seed": SEED}
        marker = path / _MARKER
        if not (marker.exists() and json.loads(marker.read_text()) == manifest):
            if path.exists():
                shutil.rmtree(path)
            path.mkdir(parents=True)
            table = _ecommerce(np.random.default_rng([SEED, 99, day]), day * rows_per_day, rows_per_day)
            shift = (day * 86_400_000_000 - (table.column("event_time").cast(pa.int64()).to_numpy()
                                             - _MONTH_START_US) // 86_400_000_000 * 86_400_000_000)
            times = table.column("event_time").cast(pa.int64()).to_numpy() + shift
            table = table.set_column(0, "event_time",
                                     pa.array(times.astype("datetime64[us]"), pa.timestamp("us", tz="UTC")))
            pq.write_table(table, path / "part-00000.parquet", row_group_size=256 * 1024)
            marker.write_text(json.dumps(manifest))
        out.append(Dataset("daily", rows_per_day, path))
    return out
