"""A parquet file's footer read with one or two ranged requests, from any :class:`Storage`.

Planning a read on an object store needs footers (the band-piece record of a file), and a
footer is a few kilobytes at the end of a file of many megabytes: reading the whole file to get
it would cost what the read is trying to save. The tail is read first (most footers fit in it);
a larger footer costs one more request of exactly its size.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.storage.base import Storage

_MAGIC = b"PAR1"
#: bytes read from a file's end in the first request
_TAIL = 64 * 1024


def read_footer(storage: Storage, path: str, size: int | None = None) -> pq.FileMetaData:
    """The footer of the parquet file at ``path`` (``size``: its length, when known; else one
    HEAD request finds it). ``ValueError`` when the file does not end like a parquet file."""
    if size is None:
        size = storage.stat(path).size
    if size < 12:
        raise ValueError(f"{path}: {size} bytes is too short for a parquet file")
    start = max(0, size - _TAIL)
    tail = storage.read_range(path, start, size - start)
    if tail[-4:] != _MAGIC:
        raise ValueError(f"{path} does not end with the parquet magic bytes")
    length = int.from_bytes(tail[-8:-4], "little")
    if length + 8 > size - 4:
        raise ValueError(f"{path}: footer length {length} does not fit a file of {size} bytes")
    if length + 8 > len(tail):
        tail = storage.read_range(path, size - length - 8, length + 8)
    footer = tail[-(length + 8):]
    # the footer alone, behind the leading magic: enough for the metadata (no page is read)
    return pq.read_metadata(pa.BufferReader(_MAGIC + footer))
