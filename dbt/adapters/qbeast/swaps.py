"""Replacing a relation by one of another kind without a moment where a failure loses it.

A model that changes materialization (``table`` or ``view`` to ``qbeast``, or back) builds the new
relation first, beside the old one; only then the old relation is renamed to ``<name>__dbt_backup``,
the new one takes the name, and the backup is dropped. Each step that ran is undone, in reverse
order, if a later one fails, so the old relation is back under its name. Folders move with the
relations where the new one must live where the old one's files are (a managed table's folder, or
a Qbeast table at the folder a managed table of the same name would use).
"""
from __future__ import annotations

import logging
import os
import shutil
from typing import Any, Callable, List, Tuple

from dbt_common.exceptions import DbtRuntimeError

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
