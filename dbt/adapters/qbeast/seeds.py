"""Seeds loaded through Spark in one job, instead of batches of SQL ``VALUES``.

dbt-spark's seed loader sends the rows as ``insert into ... values (cast(? as <type>), ...)``
statements of a few hundred rows each, and works out each cell's type again for every cell: a
numeric column's type scans the whole column (its largest precision), so a 100,000-row seed
without ``column_types`` never finished, and with them took minutes. Here each column's type is
worked out once, the rows go to Spark once as an Arrow table of the cells' text, and one job casts
them to the seed's column types (``column_types`` or dbt's inference, as dbt-spark casts them) and
inserts them into the table dbt created. Over Spark Connect the rows travel once, as Arrow.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, Callable, List, Optional, Sequence


def cell_text(value: Any) -> Optional[str]:
    """A seed cell as the text Spark casts to the column's type (None stays a null).

    Numbers are written out in full (no exponent), integral ones without a fraction, so that a
    column typed ``int`` or ``bigint`` casts as it does from dbt-spark's numeric bindings, and a
    big integer keeps every digit (dbt-spark's bindings go through a float).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        if number.is_finite() and number == number.to_integral_value():
            return str(int(number))
        return format(number, "f")
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def seed_columns(agate_table: Any) -> List[List[Optional[str]]]:
    """The seed's cells as text, column by column."""
    count = len(agate_table.column_names)
    columns: List[List[Optional[str]]] = [[] for _ in range(count)]
    for row in agate_table.rows:
        for index in range(count):
            columns[index].append(cell_text(row[index]))
    return columns


def _not_interrupted() -> None:
    """The default ``check``: nothing stops the load."""


def seed_frame(spark: Any, agate_table: Any, column_types: Sequence[str],
               names: Optional[Sequence[str]] = None,
               check: Callable[[], None] = _not_interrupted) -> Any:
    """The seed's rows as a Spark DataFrame, each column cast to its SQL type (as dbt-spark's
    statements cast their bindings), named ``names`` (positional names when None).

    ``check`` is called between the steps that take time on the driver (the cells' text, the
    Arrow table, Spark's copy of it) and raises to stop the load: dbt's interrupt, so a Ctrl-C
    stops a large seed at the next step instead of after it.

    A cell its column's type cannot hold (``'n/a'`` in an ``int`` column) is refused, naming the
    column and the cell, where the cast would have made it a null."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    count = len(agate_table.column_names)
    positional = [f"c{index}" for index in range(count)]  # any header text goes through Arrow
    check()
    cells = seed_columns(agate_table)
    check()
    arrow = pa.table({name: pa.array(values, type=pa.string())
                      for name, values in zip(positional, cells)})
    check()
    frame = spark.createDataFrame(arrow)
    check()
    # dbt-spark's sessions run with ANSI mode off, where a cell its type cannot hold would become a
    # null without a word: the first such cell of each column is looked up first and refused.
    # The rows holding one are selected by a projection and a filter of the Arrow rows, which
    # Spark's optimizer evaluates on the driver (no job); a text column holds any cell.
    checked = [(index, name, sql_type) for index, (name, sql_type)
               in enumerate(zip(positional, column_types)) if sql_type.strip().lower() != "string"]
    misfits: List[Any] = [None] * count
    if checked:
        flagged = frame.select([
            F.when(F.col(name).isNotNull() & F.col(name).cast(sql_type).isNull(),
                   F.col(name)).alias(name) for _, name, sql_type in checked])
        for row in flagged.where(F.coalesce(*[F.col(name) for _, name, _ in checked])
                                 .isNotNull()).collect():
            for (index, _, _), value in zip(checked, row):
                if misfits[index] is None:
                    misfits[index] = value
    header = [str(column) for column in agate_table.column_names]
    refused = [f"column {header[index]}: {value!r} is not a {column_types[index]}"
               for index, value in enumerate(misfits) if value is not None]
    if refused:
        raise ValueError("; ".join(refused) + " (the column's type comes from the seed's "
                         "column_types, else from dbt's inference over the column)")
    final = list(names) if names is not None else positional
    return frame.select([F.col(name).cast(sql_type).alias(final_name)
                         for name, sql_type, final_name in zip(positional, column_types, final)])


def load_seed(spark: Any, table: str, agate_table: Any, column_types: Sequence[str],
              check: Callable[[], None] = _not_interrupted) -> int:
    """Insert the seed's rows into the (empty) table ``table`` in one Spark job; the row count.

    ``column_types`` are the SQL types of the seed's columns in order (what dbt-spark casts each
    binding to); the cells are cast to them by Spark, as dbt-spark's statements cast theirs.
    ``check`` as for :func:`seed_frame`, called once more right before the insert.
    """
    rows = len(agate_table.rows)
    if rows:
        frame = seed_frame(spark, agate_table, column_types, check=check)
        check()
        frame.write.insertInto(table)
    return rows


__all__ = ["cell_text", "load_seed", "seed_columns", "seed_frame"]
