"""Skipping indexes on disk: building the index file of a commit's new files, and reading them.

Every operation that adds data files commits through :func:`qbeast.commit.commit_files`, which
calls :func:`index_new_files`: for a table that declares skipping indexes
(:data:`qbeast.core.skipping.CONFIG_KEY`) it reads the declared columns of the new files back
(column-pruned, in parallel), writes one index file ``_qbeast_skipping/<uuid>.qsi`` with their
entries and tags each new AddFile with its name. Planning loads index files through
:class:`IndexFiles`, a cache keyed by location (index files never change once written).

Like :mod:`qbeast.commit`, this module joins the format core and the transaction log; it reads
parquet with pyarrow and knows nothing of Spark. docs/skipping.md describes the layout.
"""
from __future__ import annotations

import io
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast.core import derived
from qbeast.core.skipping import (
    CONFIG_KEY,
    column_types,
    INDEX_DIR,
    INDEX_SUFFIX,
    TAG,
    Entry,
    IndexSpec,
    build_entry,
    decode_index_arrays,
    IndexFileArrays,
    declared,
    encode_index_file,
    unknown_entry,
)
from qbeast.core.skipping_pruning import IndexView, may_match, referenced_columns
from qbeast.core.value_hash import hash_values, indexable, referenced_values
from qbeast.delta.actions import AddFile, is_local_file_path, resolve_file_path
from qbeast.delta.features import COLUMN_MAPPING_MODE_KEY
from qbeast.errors import FormatError

logger = logging.getLogger("qbeast.skipping")

#: The ``revision`` tag a staging file gets with its index tag, so qbeast-spark still reads it
#: as staging (FORMAT §4.4: tags without ``revision`` are ambiguous there).
_REVISION_TAG = "revision"


def column_mapped(metadata: Any) -> bool:
    """Whether a table maps column names to physical names (entries, keyed by names, are then
    neither built nor used)."""
    return (metadata.configuration or {}).get(COLUMN_MAPPING_MODE_KEY, "none") not in ("none", "")


def table_indexes(metadata: Any) -> tuple[tuple[IndexSpec, str], ...]:
    """The declared indexes a table's files get, with the Spark type of the values they hold:
    those on existing, indexable columns (or expressions of existing string columns) of a table
    without column mapping (physical names would differ)."""
    if metadata is None:
        return ()
    configuration = metadata.configuration or {}
    if column_mapped(metadata):
        return ()
    specs = declared(configuration)
    if not specs:
        return ()
    types = column_types(metadata.schema)
    out = []
    for spec in specs:
        call = spec.call
        found = types.get(spec.source.lower())
        if found is None:
            continue
        if call is not None and found[1] == derived.SOURCE_TYPE:
            key = str(call.with_column(found[0]))
            out.append((IndexSpec(key, spec.kind, spec.fpp, spec.max_values), derived.RESULT_TYPE))
        elif call is None and indexable(found[1]):
            out.append((IndexSpec(found[0], spec.kind, spec.fpp, spec.max_values), found[1]))
    return tuple(out)


def declare(transaction: Any, declaration: str | None) -> Any:
    """``transaction`` recording ``declaration`` (:func:`qbeast.core.skipping.encode_declaration`;
    ``"{}"`` removes the table's) in the table's configuration; unchanged for None or when the
    table already holds it (a metadata action interrupts concurrent writers)."""
    metadata = transaction.effective_metadata()
    if declaration is None or metadata is None:
        return transaction
    configuration = dict(metadata.configuration or {})
    if declaration == "{}":
        configuration.pop(CONFIG_KEY, None)
    else:
        configuration[CONFIG_KEY] = declaration
    if configuration != (metadata.configuration or {}):
        transaction.update_metadata(replace(
            metadata, configuration=configuration, format_options=dict(metadata.format_options),
            partition_columns=list(metadata.partition_columns)))
    return transaction


def index_location(table_path: str, name: str) -> str:
    """Where an index file named in a tag (relative to the table root) lives."""
    return resolve_file_path(table_path, name)


def entries_of_file(storage: Any, location: str,
                    indexes: Sequence[tuple[IndexSpec, str]]) -> dict[str, Entry]:
    """The entries of the declared ``indexes`` for the data file at ``location`` (a local file
    needs no ``storage``). Where the index cannot hold the file's values exactly (an expression
    not computed exactly here) the entry says "may match"."""
    source = location if is_local_file_path(location) else io.BytesIO(storage.read_bytes(location))
    parquet = pq.ParquetFile(source)
    present = set(parquet.schema_arrow.names)
    few = _dictionary_columns(parquet, {spec.source for spec, _ in indexes
                                        if spec.kind == "values" and spec.source in present})
    if few:  # value lists: only a dictionary's few values are hashed, not every row's copy
        parquet = pq.ParquetFile(source, metadata=parquet.metadata, read_dictionary=few)  # footer once
    table = parquet.read(columns=sorted({spec.source for spec, _ in indexes if spec.source in present}))
    out: dict[str, Entry] = {}
    for spec, type_name in indexes:
        if spec.source not in present:  # a column added to the table after the file was written
            out[spec.column] = build_entry(spec, type_name, np.empty(0, dtype=np.uint64),
                                           parquet.metadata.num_rows > 0)
            continue
        values, had_null = table.column(spec.source), False
        if pa.types.is_dictionary(values.type):
            values, had_null = referenced_values(values)
        call = spec.call
        if call is not None:
            values = derived.evaluate(call, values)
            if values is None:  # not computed exactly here: the file may hold any value
                out[spec.column] = unknown_entry(spec, type_name, table.column(spec.source).null_count > 0)
                continue
        hashes, has_null = hash_values(values, type_name)
        out[spec.column] = build_entry(spec, type_name, hashes, has_null or had_null)
    return out


def _dictionary_columns(parquet: pq.ParquetFile, names: set[str]) -> list[str]:
    """Those of the string columns ``names`` that are dictionary-encoded in every row group, with
    no page in an encoding Arrow cannot decode into a dictionary (``DELTA_*``)."""
    if not names:
        return []
    metadata = parquet.metadata
    positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out = []
    for name in sorted(names):
        i = positions.get(name)
        if i is None or not pa.types.is_string(parquet.schema_arrow.field(name).type):
            continue
        chunks = [metadata.row_group(g).column(i) for g in range(metadata.num_row_groups)]
        if all(c.has_dictionary_page and not any(e.startswith("DELTA") for e in c.encodings)
               for c in chunks):
            out.append(name)
    return out


def write_index_file(log: Any, entries: Mapping[str, Mapping[str, Entry]]) -> str:
    """Write an index file with ``entries`` into the table; its name relative to the table root."""
    name = f"{INDEX_DIR}/{uuid.uuid4()}{INDEX_SUFFIX}"
    log.storage.write_bytes(index_location(log.table_path, name), encode_index_file(entries))
    return name


def tagged(add: AddFile, name: str) -> AddFile:
    """``add`` naming the index file ``name``; a staging file also gets ``revision: "0"``."""
    tags = dict(add.tags or {})
    tags.setdefault(_REVISION_TAG, "0")
    tags[TAG] = name
    return replace(add, tags=tags)


def build_entries(log: Any, adds: Sequence[AddFile],
                  indexes: Sequence[tuple[IndexSpec, str]]) -> dict[str, dict[str, Entry]]:
    """Entries of ``indexes`` for each of ``adds``, files read and built in parallel threads
    (pyarrow's reads and numpy's larger steps release the GIL; an object store's reads wait on
    the network)."""
    locations = [resolve_file_path(log.table_path, add.path) for add in adds]
    # building is CPU work that holds the GIL in part: more threads than cores only contend
    # (20M rows: 9.5-12 s in two threads, 11-15 s in four on two cores); remote reads wait
    cores = os.cpu_count() or 1
    local = all(is_local_file_path(location) for location in locations)
    workers = max(1, min(4, len(adds), cores if local else 4))
    with ThreadPoolExecutor(max_workers=workers) as threads:
        built = list(threads.map(lambda location: entries_of_file(log.storage, location, indexes),
                                 locations))
    return {add.path: entries for add, entries in zip(adds, built)}


def index_new_files(log: Any, metadata: Any, adds: Sequence[AddFile]) -> tuple[list[AddFile], str | None]:
    """``adds`` tagged with the index file this builds for them (written into the table), and its
    name; ``adds`` unchanged and None when the table declares no index or every file already
    names one (a commit made again after a race keeps its index file)."""
    indexes = table_indexes(metadata)
    todo = [a for a in adds if indexes and a.num_records != 0 and TAG not in (a.tags or {})]
    if not todo:
        return list(adds), None
    started = time.perf_counter()
    name = write_index_file(log, build_entries(log, todo, indexes))
    chosen = {a.path for a in todo}
    out = [tagged(a, name) if a.path in chosen else a for a in adds]
    logger.info("skipping indexes of %s: %d files, %s, %.3fs", log.table_path, len(todo),
                [s.label for s, _ in indexes], time.perf_counter() - started)
    return out, name


def delete_index_file(log: Any, name: str | None) -> None:
    """Remove an index file of a commit that was not made (best effort: vacuum removes the rest)."""
    if name is None:
        return
    try:
        log.storage.delete(index_location(log.table_path, name))
    except OSError as exc:
        logger.warning("could not delete index file %s of %s: %s", name, log.table_path, exc)


def referenced_index_files(adds: Iterable[Any]) -> set[str]:
    """Index file names (relative to the table root) that ``adds`` name."""
    return {tags[TAG] for a in adds if (tags := getattr(a, "tags", None)) and TAG in tags}


def unneeded_index_files(log: Any, retention_hours: float, dry_run: bool) -> tuple[list[str], int]:
    """Index files that no active file and no file removed inside the retention names, older
    than the retention (a newer one may belong to a commit still being made); deleted unless
    ``dry_run``. Their locations and total size."""
    from qbeast.delta.actions import now_ms

    snapshot = log.snapshot()
    horizon = now_ms() - int(retention_hours * 3_600_000)
    needed = referenced_index_files(snapshot.files.values())
    needed |= referenced_index_files(rm for rm in snapshot.tombstones.values()
                                     if (rm.deletion_timestamp or 0) > horizon)
    keep = {index_location(log.table_path, name) for name in needed}
    folder = index_location(log.table_path, INDEX_DIR)
    if not log.storage.exists(folder):
        return [], 0
    unneeded = [stat for stat in log.storage.walk(folder)
                if stat.path not in keep and stat.mtime_ms <= horizon]
    if not dry_run:
        for stat in unneeded:
            log.storage.delete(stat.path)
    if unneeded:
        logger.info("vacuum %s: %d unneeded skipping index files%s", log.table_path,
                    len(unneeded), " (dry run)" if dry_run else "")
    return [stat.path for stat in unneeded], sum(stat.size for stat in unneeded)


class IndexFiles:
    """Decoded index files by location, and the views of the index files plans ask about
    together; bounded, shared by threads.

    A file that cannot be read or decoded is remembered as None ("may match" for every file it
    would have covered), with one warning. A view concatenates its files' payloads, so few are
    kept: planning the same snapshot again reuses its view; the next snapshot builds one from the
    decoded files (only a new index file is read).
    """

    def __init__(self, max_files: int = 4096, max_views: int = 4) -> None:
        self._files: OrderedDict[str, IndexFileArrays | None] = OrderedDict()
        self._views: OrderedDict[tuple[str, tuple[str, ...]], IndexView] = OrderedDict()
        self._lock = threading.Lock()
        self.max_files = max_files
        self.max_views = max_views

    def arrays(self, storage: Any, location: str) -> IndexFileArrays | None:
        """The decoded index file at ``location`` (None: not readable by this engine)."""
        with self._lock:
            if location in self._files:
                self._files.move_to_end(location)
                return self._files[location]
        try:
            decoded = decode_index_arrays(storage.read_bytes(location))
        except (OSError, FormatError) as exc:
            logger.warning("skipping index file %s not used (%s): its files are read", location, exc)
            decoded = None
        with self._lock:
            self._files[location] = decoded
            while len(self._files) > self.max_files:
                self._files.popitem(last=False)
        return decoded

    def view(self, storage: Any, table_path: str, names: tuple[str, ...]) -> IndexView:
        """The index files ``names`` (relative to the table root) of the table at
        ``table_path`` as one view; files not cached yet are read in parallel."""
        key = (table_path, names)
        with self._lock:
            found = self._views.get(key)
            if found is not None:
                self._views.move_to_end(key)
                return found
        locations = [index_location(table_path, name) for name in names]
        with self._lock:
            missing = [location for location in locations if location not in self._files]
        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                list(pool.map(lambda location: self.arrays(storage, location), missing))
        view = IndexView({name: self.arrays(storage, location)
                          for name, location in zip(names, locations)})
        with self._lock:
            self._views[key] = view
            while len(self._views) > self.max_views:
                self._views.popitem(last=False)
        return view

    def clear(self) -> None:
        """Forget every decoded file and view (the next plan reads the index files again)."""
        with self._lock:
            self._files.clear()
            self._views.clear()


#: The process's cache of index files (planning in the driver and in the bridge's planner).
INDEX_FILES = IndexFiles()


def prune(table_path: str, metadata: Any, predicate: Any, adds: Sequence[AddFile],
          storage: Any = None) -> tuple[list[bool], tuple[tuple[str, int], ...]]:
    """Per file of ``adds``: whether it may hold a row matching ``predicate`` by the skipping
    indexes its tag names; and, per index the predicate uses (``"column:kind"``), how many of
    ``adds`` that index alone removes.

    Columns pruned on are the table's indexable columns the predicate names (entries outlive a
    declaration that is changed or removed; a file without an entry for the column is kept).
    """
    from qbeast.core.expressions import AlwaysTrue, Subject, references
    from qbeast.storage import storage_for

    keep_all: tuple[list[bool], tuple[tuple[str, int], ...]] = ([True] * len(adds), ())
    if isinstance(predicate, AlwaysTrue) or metadata is None or column_mapped(metadata):
        return keep_all  # (entries are keyed by the names columns had when they were built)
    names = [tags.get(TAG) if (tags := add.tags) else None for add in adds]
    distinct = tuple(sorted({name for name in names if name is not None}))
    if not distinct:
        return keep_all
    schema_types = column_types(metadata.schema)
    subjects: dict[Subject, str] = {}
    for name, type_name in schema_types.values():
        if indexable(type_name):
            subjects[name] = type_name
    for subject in references(predicate):
        if isinstance(subject, derived.Call) and schema_types.get(subject.column.lower()) == (
                subject.column, derived.SOURCE_TYPE):
            subjects[subject] = derived.RESULT_TYPE
    columns = {c: subjects[c] for c in referenced_columns(predicate, subjects)}
    if not columns:
        return keep_all
    view = INDEX_FILES.view(storage if storage is not None else storage_for(table_path),
                            table_path, distinct)
    kinds = {column: kind for column, type_name in columns.items()
             if (kind := view.batch(str(column), type_name).kind)}
    columns = {c: t for c, t in columns.items() if c in kinds}
    if not columns:
        return keep_all
    paths = [add.path for add in adds]
    keep = view.answers(may_match(predicate, view, columns), names, paths)
    removed = []
    for column in columns:
        alone = keep if len(columns) == 1 else view.answers(
            may_match(predicate, view, columns, only=column), names, paths)
        removed.append((f"{column}:{kinds[column]}", alone.count(False)))
    return keep, tuple(removed)
