"""Defaults the Qbeast format fixes as qbeast-spark does; no imports, so any layer reads them cheaply."""
from __future__ import annotations

#: Desired rows per cube when a table is created without a cube size (qbeast-spark's
#: ``DEFAULT_CUBE_SIZE``; the session setting ``spark.qbeast.index.defaultCubeSize`` defaults to it).
DEFAULT_CUBE_SIZE = 5_000_000
