"""Plain helpers of the table-operation tests (imported by conftest.py and test modules)."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.delta.actions import AddFile

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "x", "type": "double", "nullable": True, "metadata": {}},
        ],
    }
)

# Revision 1 of a 2-column (id, x) linear index, as qbeast-spark writes it.
REVISION_1 = json.dumps(
    {
        "revisionID": 1, "timestamp": 1700000000001, "tableID": "t", "desiredCubeSize": 100,
        "columnTransformers": [
            {"className": "io.qbeast.core.transform.LinearTransformer", "columnName": "id",
             "dataType": "LongDataType"},
            {"className": "io.qbeast.core.transform.LinearTransformer", "columnName": "x",
             "dataType": "DoubleDataType"},
        ],
        "transformations": [
            {"className": "io.qbeast.core.transform.LinearTransformation", "minNumber": 0,
             "maxNumber": 1000, "nullValue": 500, "orderedDataType": "LongDataType"},
            {"className": "io.qbeast.core.transform.LinearTransformation", "minNumber": 0.0,
             "maxNumber": 1.0, "nullValue": 0.5, "orderedDataType": "DoubleDataType"},
        ],
    },
    separators=(",", ":"),
)


def write_parquet(table: Path, rows: range) -> AddFile:
    """A real parquet data file at the table root holding ids ``rows`` (x = id / 1000)."""
    data = pa.table({"id": pa.array(list(rows), pa.int64()),
                     "x": pa.array([i / 1000 for i in rows], pa.float64())})
    name = f"{uuid.uuid4()}.parquet"
    table.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, table / name)
    info = os.stat(table / name)
    stats = json.dumps({"numRecords": data.num_rows, "minValues": {"id": rows[0]},
                        "maxValues": {"id": rows[-1]}, "nullCount": {"id": 0, "x": 0}})
    return AddFile(name, {}, info.st_size, info.st_mtime_ns // 1_000_000, True, stats, None)
