"""The index of one revision as its files describe it (FORMAT §6.1, §6.2 b).

Each data file carries blocks (cube, weights, count). Grouping them by cube gives the OTree the
read path walks and the append path extends: a cube's effective threshold is the *minimum*
``maxWeight`` over its blocks (appends lower thresholds and old blocks keep their original value),
and its size is the sum of the block element counts.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

from qbeast.core.blocks import Block
from qbeast.core.cube_id import CubeId
from qbeast.core.weight import MAX_WEIGHT, fraction
from qbeast.errors import FormatError

if TYPE_CHECKING:
    from qbeast.core.revision import Revision


@dataclass(frozen=True)
class FileBlock:
    """A block together with the file (path as in the Delta log) it lives in."""

    path: str
    block: Block


@dataclass(frozen=True)
class CubeStatus:
    """Everything the files say about one cube of a revision."""

    cube: CubeId
    max_weight: int
    element_count: int
    blocks: tuple[FileBlock, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """Distinct files holding blocks of this cube, in first-seen order."""
        return tuple(dict.fromkeys(fb.path for fb in self.blocks))


class IndexStatus:
    """The cubes of one revision in pre-order, with their thresholds, sizes and blocks."""

    def __init__(self, revision: Revision, cubes: Iterable[CubeStatus]) -> None:
        self.revision = revision
        self.cubes: tuple[CubeStatus, ...] = tuple(sorted(cubes, key=lambda s: s.cube))
        self._ids: list[CubeId] = [s.cube for s in self.cubes]
        self._by_cube = {s.cube: s for s in self.cubes}
        if len(self._by_cube) != len(self.cubes):
            raise FormatError("IndexStatus received the same cube twice")

    @classmethod
    def from_files(
        cls, revision: Revision, files: Iterable[tuple[str, Sequence[Block]]]
    ) -> IndexStatus:
        """Group the blocks of ``files`` (pairs of path and decoded blocks) by cube.

        Cube strings are decoded with the revision's dimension count, so a block written for
        another revision raises :class:`FormatError`.
        """
        dims = revision.dimension_count
        grouped: dict[CubeId, list[FileBlock]] = {}
        for path, blocks in files:
            for block in blocks:
                cube = CubeId.from_string(dims, block.cube)
                grouped.setdefault(cube, []).append(FileBlock(path, block))
        return cls(
            revision,
            (
                CubeStatus(
                    cube=cube,
                    max_weight=min(fb.block.max_weight for fb in fbs),
                    element_count=sum(fb.block.element_count for fb in fbs),
                    blocks=tuple(fbs),
                )
                for cube, fbs in grouped.items()
            ),
        )

    # -- lookups ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.cubes)

    def __iter__(self) -> Iterator[CubeStatus]:
        return iter(self.cubes)

    def __contains__(self, cube: object) -> bool:
        return cube in self._by_cube

    def get(self, cube: CubeId) -> CubeStatus | None:
        return self._by_cube.get(cube)

    def ceiling_index(self, cube: CubeId) -> int:
        """Index of the first cube >= ``cube`` in pre-order (``len(self)`` if none)."""
        return bisect.bisect_left(self._ids, cube)

    def subtree(self, cube: CubeId) -> Iterator[CubeStatus]:
        """The existing cubes at or below ``cube``, in pre-order (a contiguous run)."""
        for status in self.cubes[self.ceiling_index(cube) :]:
            if not cube.is_ancestor_of(status.cube):
                return
            yield status

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of the revision, each once."""
        return tuple(dict.fromkeys(p for s in self.cubes for p in s.files))

    # -- weights and domains ------------------------------------------------------------------
    def normalized_weight(self, cube: CubeId) -> float:
        """NW of an existing cube: its threshold as a fraction, or a leaf ratio >= 1.

        Leaves (threshold ``MAX_WEIGHT``) get ``desired_cube_size / element_count``. A leaf with
        no counted elements (staging or block-less files) would divide by zero in qbeast-spark; it
        is given ``desired_cube_size`` instead, which is still >= 1 and so still marks a leaf.
        """
        status = self._by_cube.get(cube)
        if status is None:
            raise KeyError(f"cube {cube!r} is not in the index of revision "
                           f"{self.revision.revision_id}")
        if status.max_weight < MAX_WEIGHT:
            return fraction(status.max_weight)
        return self.revision.desired_cube_size / max(status.element_count, 1)

    def normalized_weights(self) -> dict[CubeId, float]:
        """NW of every existing cube."""
        return {s.cube: self.normalized_weight(s.cube) for s in self.cubes}

    def tree_sizes(self) -> dict[CubeId, float]:
        """Rows in each cube's subtree, including ancestors that have no block of their own."""
        sizes: dict[CubeId, float] = {s.cube: float(s.element_count) for s in self.cubes}
        by_depth: dict[int, set[CubeId]] = {}
        for cube in sizes:
            by_depth.setdefault(cube.depth, set()).add(cube)
        # Deepest level first: a cube's tree size is final before it is added to its parent, and
        # a missing parent is created one level up, so it is processed in its turn.
        for depth in range(max(by_depth, default=0), 0, -1):
            for cube in by_depth.get(depth, ()):
                parent = cube.parent
                assert parent is not None
                if parent not in sizes:
                    sizes[parent] = 0.0
                    by_depth.setdefault(depth - 1, set()).add(parent)
                sizes[parent] += sizes[cube]
        return sizes

    def cube_domains(self) -> dict[CubeId, float]:
        """Estimated domain of each cube of the existing index (FORMAT §6.2 b).

        Bottom-up subtree sizes, then top-down: the root's domain is its tree size and a child gets
        its parent's domain split in proportion to the tree sizes of the parent's children.
        Missing inner cubes are included (they have a subtree, hence a domain).
        """
        sizes = self.tree_sizes()
        children_total: dict[CubeId, float] = {}
        for cube, size in sizes.items():
            if cube.parent is not None:
                children_total[cube.parent] = children_total.get(cube.parent, 0.0) + size
        domains: dict[CubeId, float] = {}
        for cube in sorted(sizes):  # pre-order: every parent before its children
            parent = cube.parent
            if parent is None:
                domains[cube] = sizes[cube]
            else:
                total = children_total[parent]
                domains[cube] = domains[parent] * sizes[cube] / total if total > 0 else 0.0
        return domains
