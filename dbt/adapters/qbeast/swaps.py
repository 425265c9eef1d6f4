"""Replacing a relation by one of another kind without a moment where a failure loses it.

A model that changes materialization (``table`` or ``view`` to ``qbeast``, or back) builds the new
relation first, beside the old one; only then the old relation is renamed to ``<name>__dbt_backup``,
the new one takes the name, and the backup is dropped. Each step that ran is undone, in reverse
order, if a later one fails, so the old relation is back under its name. Folders move with the
relations where the new one must live where the old one's files are (a managed table's folder, or
a Qbeast table at the folder a managed table of the same name would use).

:class:`CatalogSwap` runs these steps on the adapter's engine (:mod:`engines`); the adapter's materialization flow only
decides when a swap is needed (``QbeastAdapter.qbeast_write`` and ``qbeast_swap_in``).
"""
from __future__ import annotations

import logging
import os
import shutil
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol, Tuple

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.qbeast.errors import QbeastLocationError
from dbt.adapters.qbeast.engines import not_over_sql
from dbt.adapters.qbeast.locations import folder_content, same_location
from dbt.adapters.qbeast.relation import QbeastRelation
from dbt.adapters.qbeast.sql_literals import sql_string

log = logging.getLogger("qbeast.dbt.swaps")

BACKUP_SUFFIX = "__dbt_backup"


class Undo:
    """Steps to take back, most recent first, when a swap fails part-way; and the folders moved
    out of the way, to delete once the swap succeeded."""

    def __init__(self) -> None:
        self._steps: List[Tuple[str, Callable[[], None]]] = []
        self.moved_away: List[str] = []

    def push(self, what: str, step: Callable[[], None]) -> None:
        self._steps.append((what, step))

    def move(self, source: str, target: str) -> None:
        """Move a folder (taken back if the swap fails)."""
        move_folder(source, target)
        self.push(f"move of {source}", lambda: move_folder(target, source))

    def move_away(self, folder: str) -> None:
        """Move a replaced relation's folder aside; it is deleted once the swap succeeded."""
        aside = folder.rstrip("/") + BACKUP_SUFFIX
        self.move(folder, aside)
        self.moved_away.append(aside)

    def run(self) -> None:
        for what, step in reversed(self._steps):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - keep undoing the other steps
                log.error("could not undo %s: %s", what, exc)
        self._steps.clear()


def kind_word(relation: Any) -> str:
    """``view`` or ``table``: the word Spark's ALTER/DROP statements take for the relation."""
    return "view" if str(getattr(relation, "type", "")) in ("view", "RelationType.View") else "table"


def move_folder(source: str, target: str) -> None:
    """Rename a local folder; the target must not exist."""
    if "://" in source and not source.startswith("file:"):
        raise DbtRuntimeError(
            f"cannot move {source}: switching the materialization of a model whose files are not "
            "in a local folder needs the old relation dropped first (dbt run --full-refresh does "
            "not do it; drop it by hand)"
        )
    if os.path.exists(target):
        raise DbtRuntimeError(f"cannot move {source} to {target}: the target exists")
    os.rename(source, target)


def remove_folder(path: str) -> None:
    """Delete a folder this model owned (a replaced table's files), logging what went."""
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
        log.info("removed %s (the files of the replaced relation)", path)


def update_names_file(catalog_dir: str, record: Optional[Tuple[QbeastRelation, str]] = None,
                      forget: Optional[QbeastRelation] = None) -> None:
    """Keep the catalog's Qbeast table names readable without Spark (``qbeast describe``).

    A convenience copy of what the catalog knows: failing to update it never fails a model.
    """
    import qbeast

    try:
        if record is not None:
            qbeast.record_table_name(catalog_dir, record[0].render(), record[1])
        if forget is not None:
            qbeast.forget_table_name(catalog_dir, forget.render())
    except OSError as exc:
        log.debug("could not update the names file in %s: %s", catalog_dir, exc)


class RelationCache(Protocol):
    """What a swap tells dbt's relation cache (the adapter's ``cache_renamed`` / ``cache_dropped``)."""

    def cache_renamed(self, from_relation: Any, to_relation: Any) -> None: ...

    def cache_dropped(self, relation: Any) -> None: ...


class CatalogSwap:
    """The catalog and folder steps of putting one relation in the place of another.

    Bound to one engine (its SQL runs the catalog steps) and to dbt's relation cache, which must follow every rename and
    drop made here. The adapter's materialization flow decides *when* to swap; this class knows
    *how* (backup names, leftovers of interrupted swaps, folders moved aside, undo on failure).
    """

    def __init__(self, engine: Any, cache: RelationCache) -> None:
        self.engine = engine
        self.cache = cache

    def _move(self, undo: Undo, source: str, target: str, away: bool = False) -> None:
        """Move a table's folder (the files live where the engine runs: refused behind SQL)."""
        if self.engine.behind_sql:
            raise not_over_sql(
                f"switching the materialization of a model whose files must move ({source})",
                "drop the old relation first (SQL `drop table`), or run this switch once with "
                "method: connect or session")
        if away:
            undo.move_away(source)
        else:
            undo.move(source, target)

    # -- catalog steps -----------------------------------------------------------------------

    def described(self, relation: QbeastRelation) -> QbeastRelation:
        """``relation`` with the catalog's description of it now (no ``information`` when absent)."""
        rows = self.engine.sql(
            f"show table extended in {relation.schema} like {sql_string(relation.identifier)}")
        return QbeastRelation.create(
            database=relation.database, schema=relation.schema, identifier=relation.identifier,
            type=relation.type, information=rows[0]["information"] if rows else None,
        )

    def catalog_facts(self, relation: QbeastRelation) -> Dict[str, str]:
        """The catalog's description of ``relation`` (Type, Provider, Location...); {} when absent."""
        return self.described(relation).facts

    def rename(self, source: QbeastRelation, target: QbeastRelation) -> None:
        self.engine.sql(f"alter {kind_word(source)} {source.render()} rename to {target.render()}")
        self.cache.cache_renamed(source, target)

    def drop(self, relation: QbeastRelation) -> None:
        self.engine.sql(f"drop {kind_word(relation)} if exists {relation.render()}")
        self.cache.cache_dropped(relation)

    def drop_leftover_backup(self, backup: QbeastRelation) -> None:
        """A ``__dbt_backup`` relation a crashed swap left behind: this model's, dropped."""
        facts = self.catalog_facts(backup)
        if facts:
            self.engine.sql(
                f"drop {'view' if facts.get('Type') == 'VIEW' else 'table'} if exists {backup.render()}")

    # -- folders -----------------------------------------------------------------------------

    def temporary_folder(self, relation: QbeastRelation, location: str) -> str:
        """A free folder beside ``location`` for a Qbeast table that must move there later."""
        folder = location.rstrip("/") + "__dbt_tmp"
        self.clear_leftover_folder(folder, relation)
        return folder

    def clear_leftover_folder(self, folder: str, relation: QbeastRelation) -> None:
        """Remove what an interrupted earlier switch left at ``folder`` (this model's own table,
        or a write that never committed); refuse anything else."""
        content = folder_content(self.engine.describe_folder(folder))
        if content.kind in ("empty", "unfinished") or content.owner == relation.render().lower():
            if self.engine.behind_sql:
                raise not_over_sql(f"removing the leftover folder {folder}", "remove it on the "
                                   "server's machine, or run once with method: connect or session")
            remove_folder(folder)
        elif not content.is_free:
            raise QbeastLocationError(
                f"model {relation.identifier}: the folder {folder}, which switching the "
                f"materialization needs, holds {content.description}; move it away"
            )

    # -- swaps -------------------------------------------------------------------------------

    @contextmanager
    def swapping(self, old: QbeastRelation) -> Iterator[Undo]:
        """Rename ``old`` to its backup, let the caller put the new relation in place, then drop
        the backup and the folders moved aside; on any failure every step is taken back."""
        backup = old.incorporate(path={"identifier": f"{old.identifier}{BACKUP_SUFFIX}"})
        self.drop_leftover_backup(backup)
        undo = Undo()
        try:
            self.rename(old, backup)
            undo.push(f"rename of {old}", lambda: self.rename(backup, old))
            yield undo
        except BaseException:
            undo.run()
            raise
        self.drop(backup)
        for folder in undo.moved_away:
            remove_folder(folder)

    def replace_with_qbeast(self, old: QbeastRelation, relation: QbeastRelation, folder: str,
                            location: str, register: Callable[[], None]) -> None:
        """Put the Qbeast table written at ``folder`` in the place of the view or plain table
        ``old``: at ``location``, registered by ``register``."""
        try:
            with self.swapping(old) as undo:
                if folder != location:
                    if self.engine.describe_folder(location).kind != "missing":  # its folder stays
                        self.clear_leftover_folder(location.rstrip("/") + BACKUP_SUFFIX, relation)
                        self._move(undo, location, "", away=True)
                    self._move(undo, folder, location)
                register()
        except BaseException:
            if folder != location:  # the Qbeast table written beside the old one is abandoned
                remove_folder(folder)
            raise

    def swap_in(self, old_relation: QbeastRelation, intermediate: QbeastRelation,
                target: QbeastRelation, lands_at: str) -> None:
        """Replace the Qbeast table ``old_relation`` by the built ``intermediate`` (table or view).

        ``lands_at`` is the folder a managed table named ``target`` uses: the Qbeast table's files
        move away only when the new managed table must take that folder, and are deleted once
        the new table holds the name.
        """
        old_location = old_relation.location
        managed = self.catalog_facts(intermediate).get("Type", "").upper() == "MANAGED"
        try:
            with self.swapping(old_relation) as undo:
                if (managed and old_location and same_location(old_location, lands_at)
                        and self.engine.describe_folder(old_location).kind != "missing"):
                    self.clear_leftover_folder(old_location.rstrip("/") + BACKUP_SUFFIX, target)
                    self._move(undo, old_location, "", away=True)
                self.rename(intermediate, target)
        except BaseException:
            self.drop(intermediate)  # the new relation did not make it: nothing left behind
            raise
