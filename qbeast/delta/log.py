"""Entry point of the transaction log layer: one :class:`DeltaLog` per table path.

The log lives in ``<table>/_delta_log``: commit files ``<20-digit version>.json``, checkpoints
``<version>.checkpoint.parquet`` (or ``.checkpoint.<part>.<parts>.parquet``) and the
``_last_checkpoint`` hint. Anything else there (temporary files of our put-if-absent, CRC files,
V2 checkpoint files, compacted logs) is ignored by the listing.

Commit timestamps used for time travel are the commit files' modification times, made strictly
increasing along versions as the Delta protocol prescribes (clocks and copies can reorder them),
or the commits' ``inCommitTimestamp`` from the version where a table enabled those.
"""
from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timezone
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable

from qbeast.delta.actions import CommitInfo, Metadata
from qbeast.delta.checkpoint import read_checkpoint, read_last_checkpoint, write_checkpoint
from qbeast.delta.errors import CorruptLogError, NotADeltaTableError, VersionNotFoundError
from qbeast.delta.file_index import FileIndex, gc_paused
from qbeast.delta.snapshot import ReplayState, Snapshot, parse_commit
from qbeast.errors import InvalidOptionError
from qbeast.storage import Storage, storage_for

if TYPE_CHECKING:
    from qbeast.delta.transaction import Transaction

logger = logging.getLogger("qbeast.delta.log")

LOG_DIR = "_delta_log"
ICT_ENABLED_KEY = "delta.enableInCommitTimestamps"
ICT_VERSION_KEY = "delta.inCommitTimestampEnablementVersion"
_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")


def commit_file_name(version: int) -> str:
    """``00000000000000000042.json`` for version 42."""
    return f"{version:020d}.json"


class LogListing:
    """What ``_delta_log`` holds: commit and checkpoint files by version.

    Only names are listed; modification times (needed for commit timestamps only) are fetched
    on first use, because stat-ing a thousand commit files costs more than replaying ten.
    """

    def __init__(self, storage: Storage, log_path: str, since: int | None = None) -> None:
        self.storage = storage
        #: the first version listed (None: the whole log was listed)
        self.since = since
        self.commits: dict[int, str] = {}
        # version -> number of parts -> {part number: path}
        self.checkpoints: dict[int, dict[int, dict[int, str]]] = {}
        self._timestamps: dict[int, int] | None = None
        names = (storage.list_names(log_path) if since is None
                 else storage.list_names_after(log_path, f"{since - 1:020d}.~" if since > 0 else ""))
        for name in names:
            if len(name) == 25 and name.endswith(".json"):  # cheap test first: most names are commits
                if _COMMIT_RE.match(name):
                    self.commits[int(name[:20])] = f"{log_path}/{name}"
                continue
            match = _CHECKPOINT_RE.match(name) if ".checkpoint." in name else None
            if match:
                version = int(match.group(1))
                part = int(match.group(2) or 1)
                parts = int(match.group(3) or 1)
                self.checkpoints.setdefault(version, {}).setdefault(parts, {})[part] = (
                    f"{log_path}/{name}"
                )

    @property
    def latest_version(self) -> int:
        """Newest version (a checkpoint without its commit file still counts); -1 if empty."""
        candidates = list(self.commits) + list(self.checkpoints)
        return max(candidates) if candidates else -1

    def complete_checkpoints(
        self, max_version: int, hint: dict | None = None
    ) -> list[tuple[int, list[str]]]:
        """``(version, part paths)`` of every checkpoint with all its parts present, newest first.

        When one version has several checkpoints (a single file and a multi-part set, say), the
        one ``_last_checkpoint`` (``hint``) describes comes first; the others stay as fallbacks.
        """
        hinted_version = hint.get("version") if hint else None
        hinted_parts = int(hint.get("parts") or 1) if hint else None
        out = []
        for version in sorted(self.checkpoints, reverse=True):
            if version > max_version:
                continue
            sets = sorted(self.checkpoints[version].items())
            if version == hinted_version:
                sets.sort(key=lambda item: item[0] != hinted_parts)
            for parts, found in sets:
                if len(found) == parts:
                    out.append((version, [found[i] for i in sorted(found)]))
        return out

    def commit_timestamps(self) -> dict[int, int]:
        """Commit time per version: file mtimes forced to increase strictly with the version."""
        if self._timestamps is None:
            out: dict[int, int] = {}
            previous = None
            for version in sorted(self.commits):
                try:
                    ts = self.storage.stat(self.commits[version]).mtime_ms
                except FileNotFoundError:  # cleaned up meanwhile: keep the order at least
                    ts = previous + 1 if previous is not None else 0
                if previous is not None and ts <= previous:
                    ts = previous + 1
                out[version] = previous = ts
            self._timestamps = out
        return self._timestamps

    def checkpoint_mtime(self, version: int) -> int:
        """Modification time of a checkpoint (for versions whose commit file is gone)."""
        paths = [p for found in self.checkpoints.get(version, {}).values() for p in found.values()]
        return max((self.storage.stat(p).mtime_ms for p in paths), default=0)


class DeltaLog:
    """Reads and writes the transaction log of the table at ``table_path``."""

    def __init__(self, table_path: str, storage: Storage) -> None:
        self.storage = storage
        self.table_path = table_path
        self.log_path = f"{table_path.rstrip('/')}/{LOG_DIR}"

    @classmethod
    def for_path(cls, path: str, storage: Storage | None = None,
                 options: Mapping[str, object] | None = None) -> DeltaLog:
        """The log of the table at ``path``: a local path, a ``file:`` URI or an object-store
        location (``s3://``, ``s3a://``, ``gs://``, ``abfss://``; ``options`` configure that store).

        Without ``storage`` the location's scheme chooses one (:func:`storage_for`)."""
        storage = storage or storage_for(path, options)
        return cls(storage.resolve(path), storage)

    def __repr__(self) -> str:
        return f"DeltaLog({self.table_path!r})"

    # ------------------------------------------------------------------ listing

    def list_log(self, since: int | None = None) -> LogListing:
        """List ``_delta_log`` once (commits and classic checkpoints), from version ``since``
        on when given (one listing that starts there on an object store)."""
        return LogListing(self.storage, self.log_path, since)

    def table_exists(self) -> bool:
        """True when the log holds at least one version."""
        return self.list_log().latest_version >= 0

    def latest_version(self) -> int:
        """Newest committed version; raises :class:`NotADeltaTableError` if there is none."""
        return self._require_listing().latest_version

    def version_stamp(self, version: int) -> tuple[int, int]:
        """Size and modification time of the file that holds ``version`` (its commit, or else its
        checkpoint); ``(-1, -1)`` when neither exists.

        A version number alone does not name a table state for ever: a folder deleted and written
        again (a table rebuilt in place) starts over at version 0. Readers that keep snapshots per
        version add this stamp to their key, at the cost of one ``stat``.
        """
        try:
            found = self.storage.stat(f"{self.log_path}/{commit_file_name(version)}")
            return found.size, found.mtime_ms
        except FileNotFoundError:
            pass
        listing = self.list_log()
        if version not in listing.checkpoints:
            return -1, -1
        return 0, listing.checkpoint_mtime(version)

    def _require_listing(self) -> LogListing:
        listing = self.list_log()
        if listing.latest_version < 0:
            if not self.storage.exists(self.table_path):
                reason = "the path does not exist"
            elif not self.storage.exists(self.log_path):
                reason = f"it has no {LOG_DIR} folder"
            else:
                reason = f"its {LOG_DIR} folder holds no commit or checkpoint file"
            raise NotADeltaTableError(f"{self.table_path} is not a Delta table: {reason}")
        return listing

    def read_commit(self, version: int) -> bytes:
        """Raw content of the commit file of ``version``."""
        return self.storage.read_bytes(f"{self.log_path}/{commit_file_name(version)}")

    # ------------------------------------------------------------------ snapshots

    def snapshot(
        self, version: int | None = None, timestamp: int | float | str | datetime | None = None
    ) -> Snapshot:
        """The table state at ``version``, at the last version committed at or before
        ``timestamp`` (epoch ms, ISO string or datetime; naive means UTC), or the latest."""
        if version is not None and timestamp is not None:
            raise InvalidOptionError("give either version or timestamp for time travel, not both")
        started = time.perf_counter()
        if version is None and timestamp is None:
            snapshot = self._latest_from_checkpoint()
            if snapshot is not None:
                logger.debug(
                    "snapshot loaded from the last checkpoint's listing: table=%s version=%d "
                    "checkpoint=%s files=%d elapsed=%.3fs", self.table_path, snapshot.version,
                    snapshot.checkpoint_version, len(snapshot.files), time.perf_counter() - started,
                )
                return snapshot
        listing = self._require_listing()
        latest = listing.latest_version
        if timestamp is not None:
            version = self._version_at(listing, _to_epoch_ms(timestamp))
        elif version is None:
            version = latest
        elif not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise InvalidOptionError(f"version must be a non-negative integer, got {version!r}")
        elif version > latest:
            raise VersionNotFoundError(
                f"version {version} of {self.table_path} does not exist; latest version is {latest}"
            )
        with gc_paused():
            snapshot = self._build(listing, version)
        logger.debug(
            "snapshot loaded: table=%s version=%d checkpoint=%s files=%d elapsed=%.3fs",
            self.table_path, version, snapshot.checkpoint_version, len(snapshot.files),
            time.perf_counter() - started,
        )
        return snapshot

    def _latest_from_checkpoint(self) -> Snapshot | None:
        """The latest snapshot from ``_last_checkpoint`` and a listing that starts at its version
        (as Delta readers do: a long log is never listed whole); None when there is no hint or
        what it names cannot be used (the full listing then decides, with its fallbacks)."""
        hint = read_last_checkpoint(self.storage, self.log_path)
        since = hint.get("version") if hint else None
        if not isinstance(since, int) or isinstance(since, bool) or since < 0:
            return None
        listing = self.list_log(since)
        if since not in listing.checkpoints:
            return None
        try:
            with gc_paused():
                return self._build(listing, listing.latest_version, hint)
        except CorruptLogError:  # the hinted checkpoint is unusable and nothing before it was listed
            return None

    def _apply_commits(self, state: ReplayState, start: int, version: int) -> None:
        for v in range(start, version + 1):
            source = f"{self.log_path}/{commit_file_name(v)}"
            try:
                data = self.read_commit(v)
            except FileNotFoundError:
                raise CorruptLogError(
                    f"{source} disappeared while the log was being read (concurrent log cleanup?); "
                    "retry"
                ) from None
            state.apply(data, source)

    def _build(self, listing: LogListing, version: int, hint: dict | None = None) -> Snapshot:
        """Replay ``version`` from the newest usable checkpoint of ``listing`` (``hint``: the
        ``_last_checkpoint`` already read, else it is read here) and the commits after it."""
        commits = listing.commits
        state: ReplayState | None = None
        start = 0
        if hint is None and listing.checkpoints:
            hint = read_last_checkpoint(self.storage, self.log_path)
        unreadable: list[str] = []
        for cp_version, paths in listing.complete_checkpoints(version, hint):
            if all(v in commits for v in range(cp_version + 1, version + 1)):
                size = hint.get("sizeInBytes") if hint and hint.get("version") == cp_version else None
                try:
                    cp = read_checkpoint(self.storage, paths, size if isinstance(size, int) else None)
                except CorruptLogError as exc:
                    # as Delta readers do: fall back to an older checkpoint or the JSON commits
                    logger.warning("skipping unreadable checkpoint %s: %s", paths[0], exc)
                    unreadable.append(str(exc))
                    continue
                state = ReplayState(FileIndex(cp.adds), cp.tombstones, cp.metadata, cp.protocol,
                                    cp.txns, self.table_path)
                start = cp_version + 1
                break
        if state is None:
            missing = [v for v in range(0, version + 1) if v not in commits]
            if missing:
                earliest = self._earliest_version(listing)
                if version < earliest:
                    raise VersionNotFoundError(
                        f"version {version} of {self.table_path} cannot be reconstructed: the "
                        f"earliest available version is {earliest}"
                    )
                raise CorruptLogError(
                    f"Delta log of {self.table_path} is missing commit file(s) for version(s) "
                    f"{missing[:5]} needed to reconstruct version {version}"
                    + (f"; the checkpoint that covers them is unusable: {unreadable[0]}"
                       if unreadable else "")
                )
            state = ReplayState(table_path=self.table_path)
        checkpoint_version = start - 1 if start > 0 else None
        self._apply_commits(state, start, version)
        return Snapshot(
            self, version, state, self._timestamp_source(listing, version, state), checkpoint_version
        )

    def earliest_version(self) -> int:
        """Oldest version that time travel can reconstruct (older commits may be cleaned up)."""
        return self._earliest_version(self._require_listing())

    def _earliest_version(self, listing: LogListing) -> int:
        """Oldest version that can be reconstructed (a checkpoint followed by every commit)."""
        latest = listing.latest_version
        candidates = [v for v, _ in listing.complete_checkpoints(latest)]
        if 0 in listing.commits:
            candidates.append(0)
        ok = [c for c in candidates if all(v in listing.commits for v in range(c + 1, latest + 1))]
        return min(ok) if ok else latest

    def _timestamp_source(self, listing: LogListing, version: int, state: ReplayState) -> Callable[[], int]:
        """How to get the commit time of ``version``; evaluated only if someone asks for it."""
        start = _ict_start(state.metadata)
        if start is not None and version >= start:
            info = state.commit_info
            if info is not None and info.in_commit_timestamp is not None:
                ict = int(info.in_commit_timestamp)
                return lambda: ict
            return lambda: self._in_commit_timestamp(version)

        def from_files() -> int:
            # file times are made strictly increasing over the whole log, so a listing that
            # started at a checkpoint is completed first (only when a timestamp is asked for)
            whole = listing if listing.since is None else self.list_log()
            stamps = whole.commit_timestamps()
            return stamps[version] if version in stamps else whole.checkpoint_mtime(version)

        return from_files

    def _in_commit_timestamp(self, version: int) -> int:
        info = self._commit_info(version, 0)
        if info.in_commit_timestamp is None:
            raise CorruptLogError(
                f"{self.log_path}/{commit_file_name(version)} has no commitInfo.inCommitTimestamp "
                "although in-commit timestamps are enabled for this version"
            )
        return int(info.in_commit_timestamp)

    def _version_at(self, listing: LogListing, ts_ms: int) -> int:
        """Last version committed at or before ``ts_ms``.

        With in-commit timestamps (``delta.enableInCommitTimestamps``) the versions from the
        enablement version on are searched by their ``inCommitTimestamp`` (monotonic by
        protocol, so a binary search reading one commitInfo per step); older versions, and
        tables without the property, by commit file times.
        """
        latest = listing.latest_version
        earliest = self._earliest_version(listing)
        start = _ict_start(self._build(listing, latest).metadata)
        if start is not None:
            lo = max(start, earliest)
            if lo <= latest and self._in_commit_timestamp(lo) <= ts_ms:
                hi = latest
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if self._in_commit_timestamp(mid) <= ts_ms:
                        lo = mid
                    else:
                        hi = mid - 1
                return lo
        stamps = listing.commit_timestamps()
        eligible = [
            v for v, ts in stamps.items()
            if ts <= ts_ms and v >= earliest and (start is None or v < start)
        ]
        if not eligible:
            first = stamps.get(earliest)
            raise VersionNotFoundError(
                f"no version of {self.table_path} was committed at or before timestamp {ts_ms} "
                f"({_iso(ts_ms)}); the earliest available version {earliest} was committed at "
                f"{first} ({_iso(first) if first is not None else 'unknown'})"
            )
        return max(eligible)

    # ------------------------------------------------------------------ history

    def history(self, limit: int | None = None) -> list[CommitInfo]:
        """Commit infos, newest first (``version`` and ``timestamp`` always filled in)."""
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidOptionError(f"history limit must be a positive integer, got {limit!r}")
        listing = self._require_listing()
        stamps = listing.commit_timestamps()
        out: list[CommitInfo] = []
        for version in sorted(listing.commits, reverse=True):
            if limit is not None and len(out) >= limit:
                break
            out.append(self._commit_info(version, stamps[version]))
        return out

    def _commit_info(self, version: int, file_ts: int) -> CommitInfo:
        data = self.read_commit(version)
        source = f"{self.log_path}/{commit_file_name(version)}"
        info = None
        # commitInfo is conventionally the first line; only fall back to parsing every line.
        first = data.split(b"\n", 1)[0]
        if first.startswith(b'{"commitInfo"'):
            for _key, body in parse_commit(first, source):
                info = CommitInfo.from_json(body)
        else:
            for key, body in parse_commit(data, source):
                if key == "commitInfo":
                    info = CommitInfo.from_json(body)
                    break
        info = info or CommitInfo()
        info.version = version
        if info.timestamp is None:
            info.timestamp = file_ts
        return info

    # ------------------------------------------------------------------ writing

    def start_transaction(self, read_snapshot: Snapshot | None = None) -> Transaction:
        """A transaction based on ``read_snapshot`` (default: the latest, or none for a new table)."""
        from qbeast.delta.transaction import Transaction

        if read_snapshot is None and self.table_exists():
            read_snapshot = self.snapshot()
        return Transaction(self, read_snapshot)

    def checkpoint(self, version: int | None = None, parts: int = 1) -> list[str]:
        """Write a checkpoint at ``version`` (default latest); returns the files written."""
        return write_checkpoint(self, self.snapshot(version), parts)


def _ict_start(metadata: Metadata | None) -> int | None:
    """First version whose commit time is its in-commit timestamp; None when they are off."""
    if metadata is None:
        return None
    config = metadata.configuration
    if config.get(ICT_ENABLED_KEY, "false").lower() != "true":
        return None
    try:
        return int(config.get(ICT_VERSION_KEY, "0"))
    except ValueError:
        raise CorruptLogError(
            f"table property {ICT_VERSION_KEY}={config[ICT_VERSION_KEY]!r} is not a version number"
        ) from None


def _to_epoch_ms(value: int | float | str | datetime) -> int:
    if isinstance(value, bool):
        raise InvalidOptionError(f"timestamp must be epoch milliseconds, ISO text or datetime, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidOptionError(
                f"timestamp {value!r} is not ISO 8601 (e.g. '2024-05-01T12:00:00Z')"
            ) from exc
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return int(value.timestamp() * 1000)
    raise InvalidOptionError(
        f"timestamp must be epoch milliseconds, ISO text or datetime, got {type(value).__name__}"
    )


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat()
