"""Reading a data file's footer, and the band-piece record in it, without Spark.

A file written in band pieces (:mod:`qbeast.core.band_row_groups`) records them in its parquet
footer. The read wing's planner reads that record to open only the pieces a sample needs, the
change wing rewrites such a file in the same pieces, and the write wing writes the record
(:mod:`qbeast.spark.write.row_groups`): reading it sits here, below the wings, so that none of
them imports another for it.
"""
from __future__ import annotations

import logging
from typing import Any

import pyarrow.parquet as pq

from qbeast.core.band_row_groups import PieceLayout
from qbeast.delta.actions import is_local_file_path
from qbeast.spark.file_access import is_remote
from qbeast.storage import storage_for
from qbeast.storage.parquet_footer import read_footer

logger = logging.getLogger("qbeast.spark.data_footers")


def read_piece_layout(location: str, size: int | None = None) -> PieceLayout | None:
    """The piece record of a data file's footer, with its row groups; ``None`` without a record
    or when the footer cannot be read here (the file is then read, or rewritten, whole)."""
    footer = read_data_footer(location, size)
    return PieceLayout.of(footer) if footer is not None else None


def read_data_footer(location: str, size: int | None = None) -> Any:
    """The ``pyarrow.parquet.FileMetaData`` of a data file; ``None`` when it cannot be read here.

    Local files are opened directly; files on an object store through its storage, with ranged
    requests for the footer only (``size``, from the log, saves one request).
    """
    try:
        if is_local_file_path(location):
            return pq.read_metadata(location)
        if not is_remote(location):
            return None  # a scheme no storage here serves (hdfs://, ...): read the file whole
        return read_footer(storage_for(location), location, size)
    except (OSError, ValueError) as exc:
        logger.debug("footer of %s not read (%s)", location, exc)
        return None


__all__ = ["read_data_footer", "read_piece_layout"]
