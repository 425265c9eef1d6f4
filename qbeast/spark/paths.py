"""How a file location is handed to Spark's file readers.

Spark expands ``{}``, ``[]``, ``*`` and ``?`` in every path its readers are given. Delta paths are
URIs in which those characters are legal, so every scan of named files or folders (the read,
write and change wings alike) escapes them here, in one place.
"""
from __future__ import annotations

import re

_GLOB_CHARACTERS = re.compile(r"([\\{}\[\]*?])")


def spark_path(location: str) -> str:
    """``location`` as Spark's file readers take it: glob characters escaped, so a data file or
    a folder whose name (or whose table folder's name) holds one is found as itself."""
    return _GLOB_CHARACTERS.sub(r"\\\1", location)
