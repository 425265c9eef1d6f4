"""A set of cubes laid out for vectorized root-to-leaf walks over whole Arrow batches.

Both the cube-domain estimation and the row -> cube assignment walk every row's container path
from the root, one level at a time, deciding per row whether it stops in the current cube. Doing
that with ``CubeId`` objects would be a Python loop per row and level. Instead the cubes get integer
node ids (0 = root) and each non-root node is found under the key ``parent_id * 2**d + code`` in a
sorted int64 array, so one ``np.searchsorted`` moves every active row one level down at once.

Coordinates advance with ``qbeast.core.cube_id.descend_one_level`` (the step of ``point_codes``),
one level per call, so rows that already stopped cost nothing at deeper levels.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from qbeast.core.cube_id import CubeId
from qbeast.errors import InvalidOptionError

#: Largest dimension count whose child keys (``node * 2**d + code``) stay far from int64 overflow.
MAX_TREE_DIMENSIONS = 30


class CubeTree:
    """Cubes of one revision as node ids with a vectorized child lookup.

    ``cubes[i]`` is node ``i``; the root is always node 0. Ancestors missing from the input are
    added as nodes (``given[i]`` is False for them) so that every given cube is reachable.
    """

    def __init__(self, dimensions: int, cubes: Iterable[CubeId]) -> None:
        if not 1 <= dimensions <= MAX_TREE_DIMENSIONS:
            raise InvalidOptionError(
                f"the writer indexes 1 to {MAX_TREE_DIMENSIONS} columns, got {dimensions}"
            )
        self.dimensions = dimensions
        given = set(cubes)
        every = set(given)
        every.add(CubeId.root(dimensions))
        for cube in given:
            if cube.dimensions != dimensions:
                raise InvalidOptionError(
                    f"cube {cube!r} has {cube.dimensions} dimensions, the tree {dimensions}"
                )
            every.update(cube.ancestors())
        self.cubes: list[CubeId] = sorted(every)  # pre-order: the root first, parents first
        self.index: dict[CubeId, int] = {c: i for i, c in enumerate(self.cubes)}
        self.given = np.array([c in given for c in self.cubes], dtype=bool)
        parents = np.full(len(self.cubes), -1, dtype=np.int64)
        last_codes = np.zeros(len(self.cubes), dtype=np.int64)
        for i, cube in enumerate(self.cubes[1:], start=1):
            parents[i] = self.index[cube.parent]  # type: ignore[index]
            last_codes[i] = cube.codes[-1]
        self.parents = parents
        keys = (parents[1:] << dimensions) | last_codes[1:]
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._key_nodes = (order + 1).astype(np.int64)

    def __len__(self) -> int:
        return len(self.cubes)

    def values(self, mapping: Mapping[CubeId, float], default: float, dtype: Any) -> np.ndarray:
        """Per node, ``mapping[cube]`` or ``default`` (attribute arrays indexed by node id)."""
        return np.array([mapping.get(c, default) for c in self.cubes], dtype=dtype)

    def child(self, nodes: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Node id of the child ``codes`` of each of ``nodes``; -1 if absent (or ``nodes`` < 0)."""
        out = np.full(len(nodes), -1, dtype=np.int64)
        if len(self._keys) == 0 or len(nodes) == 0:
            return out
        valid = nodes >= 0
        keys = (nodes << self.dimensions) | codes
        pos = np.searchsorted(self._keys, keys)
        pos = np.minimum(pos, len(self._keys) - 1)
        found = valid & (self._keys[pos] == keys)
        out[found] = self._key_nodes[pos[found]]
        return out

    def strings(self) -> np.ndarray:
        """Cube strings per node (object array), as written in block tags."""
        return np.array([c.string for c in self.cubes], dtype=object)


def cube_of_code(tree_cubes: Sequence[CubeId], node: int, code: int | None) -> CubeId:
    """The cube of ``node``, or its child ``code`` when one is given (cubes outside the tree)."""
    cube = tree_cubes[node]
    return cube if code is None else cube.child(int(code))
