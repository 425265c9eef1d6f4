"""Arrow record batches as the indexing steps receive them from Spark tasks."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

#: A function Spark runs over a task's batches (``mapInArrow``): batches in, batches out.
ArrowMapFunction = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def concat_batches(batches: list[pa.RecordBatch]) -> pa.Table:
    """One table holding ``batches`` (which share a schema), chunks combined for numpy access."""
    return pa.Table.from_batches(batches).combine_chunks()
