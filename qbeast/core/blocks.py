"""Block metadata carried in Delta ``AddFile.tags`` (FORMAT §5, §4.4).

A block is the part of one file that belongs to one cube. The writer emits only the current form:

    {"revision": "1", "blocks": "[{\\"cubeId\\":\\"w\\",\\"minWeight\\":..,\\"maxWeight\\":..,\\"elementCount\\":..}]"}

The reader accepts every generation found in real tables, and says which one it saw, so that
operations such as the format upgrade can tell what needs rewriting:

* ``CURRENT`` — 0.8+: ``cubeId`` keys, no ``replicated``;
* ``REPLICATED_FLAG`` — 0.6–0.7: the same plus ``"replicated": bool``;
* ``CUBE_KEY`` — blocks keyed ``"cube"``, as the published format document describes them
  (qbeast-spark itself rejects this; accepting it here costs nothing and reads such tables);
* ``LEGACY_FLAT`` — before 0.6: one block per file as flat string tags
  (``state``, ``cube``, ``revision``, ``elementCount``, ``minWeight``, ``maxWeight``);
* ``NO_BLOCKS`` — a revision tag without block information: one root block of that revision;
* ``STAGING`` — no tags, an empty tag map or revision ``"0"``: one root block of revision 0.
"""
from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from qbeast.core.cube_id import ALPHABET
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import FormatError

REVISION_TAG = "revision"
BLOCKS_TAG = "blocks"

_ALPHABET_SET = frozenset(ALPHABET)
_BLOCK_KEYS = ("cubeId", "minWeight", "maxWeight", "elementCount")
_ACCEPTED_BLOCK_KEYS = frozenset(_BLOCK_KEYS) | {"cube", "replicated"}
_LEGACY_KEYS = ("state", "cube", "elementCount", "minWeight", "maxWeight")
_LEGACY_STATES = ("FLOODED", "ANNOUNCED", "REPLICATED")
_LEGACY_REPLICATED_STATES = frozenset({"ANNOUNCED", "REPLICATED"})
_MAX_LONG = 2**63 - 1
_DECIMAL = re.compile(r"-?[0-9]+")


class TagFormat(enum.Enum):
    """Generation of the tags a file was written with (see the module docstring)."""

    CURRENT = "current"
    REPLICATED_FLAG = "0.6-0.7"
    CUBE_KEY = "cube-key"
    LEGACY_FLAT = "pre-0.6"
    NO_BLOCKS = "no-blocks"
    STAGING = "staging"


@dataclass(frozen=True)
class Block:
    """The rows of one file that belong to one cube.

    ``max_weight`` is the cube's threshold when the block was written (``MAX_WEIGHT`` for leaves),
    not the largest row weight; ``min_weight`` is the smallest row weight in the block.
    ``cube`` stays a string because the dimension count lives in the revision, not in the tags.
    """

    cube: str
    min_weight: int
    max_weight: int
    element_count: int
    replicated: bool = False

    def __post_init__(self) -> None:
        _check_cube_string(self.cube, "Block.cube")
        _check_int(self.min_weight, MIN_WEIGHT, MAX_WEIGHT, "Block.min_weight")
        _check_int(self.max_weight, MIN_WEIGHT, MAX_WEIGHT, "Block.max_weight")
        _check_int(self.element_count, 0, _MAX_LONG, "Block.element_count")
        if not isinstance(self.replicated, bool):
            raise FormatError(f"Block.replicated must be a bool, got {self.replicated!r}")

    def to_json_obj(self) -> dict[str, Any]:
        """The block as the current writer serializes it (key order matters to byte-compare)."""
        return {
            "cubeId": self.cube,
            "minWeight": self.min_weight,
            "maxWeight": self.max_weight,
            "elementCount": self.element_count,
        }


@dataclass(frozen=True)
class DecodedTags:
    """What a file's tags say: its revision, its blocks and the tag generation found."""

    revision_id: int
    blocks: tuple[Block, ...]
    format: TagFormat

    @property
    def is_staging(self) -> bool:
        return self.revision_id == 0


def staging_block() -> Block:
    """The single root block a staging (or block-less) file is read as."""
    return Block("", MIN_WEIGHT, MAX_WEIGHT, 0)


def encode_blocks(blocks: Iterable[Block]) -> str:
    """The compact JSON array of the ``blocks`` tag, keys in qbeast-spark's order."""
    objs = []
    for block in blocks:
        if not isinstance(block, Block):
            raise FormatError(f"blocks must contain Block objects, got {block!r}")
        objs.append(block.to_json_obj())
    return json.dumps(objs, separators=(",", ":"))


def encode_tags(revision_id: int, blocks: Iterable[Block]) -> dict[str, str]:
    """AddFile tags for a file of ``revision_id`` holding ``blocks`` (current format)."""
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id < 0:
        raise FormatError(f"revision_id must be a non-negative int, got {revision_id!r}")
    block_list = list(blocks)
    if not block_list:
        raise FormatError("a Qbeast data file must hold at least one block, got none")
    return {REVISION_TAG: str(revision_id), BLOCKS_TAG: encode_blocks(block_list)}


def decode_tags(tags: Mapping[str, str] | None) -> DecodedTags:
    """Decode the tags of an AddFile of any format generation (FORMAT §5, §4.4).

    Tags unrelated to Qbeast (Delta may add its own) are ignored. Malformed Qbeast tags raise
    :class:`FormatError` naming the offending value.
    """
    if not tags:
        return DecodedTags(0, (staging_block(),), TagFormat.STAGING)
    if not isinstance(tags, Mapping):
        raise FormatError(f"AddFile tags must be a map of strings, got {type(tags).__name__}")
    revision_text = tags.get(REVISION_TAG)
    if revision_text is None:
        # qbeast-spark reads a missing revision as 0: the file is staging and read in full.
        return DecodedTags(0, (staging_block(),), TagFormat.STAGING)
    revision_id = _parse_revision(revision_text)
    if revision_id == 0:
        return DecodedTags(0, (staging_block(),), TagFormat.STAGING)
    if BLOCKS_TAG in tags:
        blocks, fmt = _decode_blocks_json(tags[BLOCKS_TAG])
        return DecodedTags(revision_id, blocks, fmt)
    if "cube" in tags or "state" in tags:
        return DecodedTags(revision_id, (_decode_legacy(tags),), TagFormat.LEGACY_FLAT)
    return DecodedTags(revision_id, (staging_block(),), TagFormat.NO_BLOCKS)


def _parse_revision(text: object) -> int:
    if not isinstance(text, str) or not text.isascii() or not text.isdigit():
        raise FormatError(
            f"tag {REVISION_TAG!r} must be a non-negative decimal integer string, got {text!r}"
        )
    return int(text)


def _decode_blocks_json(text: object) -> tuple[tuple[Block, ...], TagFormat]:
    if not isinstance(text, str):
        raise FormatError(f"tag {BLOCKS_TAG!r} must be a JSON string, got {type(text).__name__}")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"tag {BLOCKS_TAG!r} is not valid JSON ({exc}): {text[:200]!r}") from exc
    if not isinstance(raw, list):
        raise FormatError(
            f"tag {BLOCKS_TAG!r} must be a JSON array of block objects, got {type(raw).__name__}"
        )
    if not raw:
        raise FormatError(f"tag {BLOCKS_TAG!r} is an empty array: a data file has >= 1 block")
    fmt = TagFormat.CURRENT
    blocks = []
    for i, obj in enumerate(raw):
        where = f"block {i} of tag {BLOCKS_TAG!r}"
        if not isinstance(obj, dict):
            raise FormatError(f"{where} must be a JSON object, got {obj!r}")
        unknown = sorted(set(obj) - _ACCEPTED_BLOCK_KEYS)
        if unknown:
            raise FormatError(
                f"{where} has unknown key(s) {unknown}; allowed keys are "
                f"{sorted(_ACCEPTED_BLOCK_KEYS)}"
            )
        if "cubeId" in obj and "cube" in obj:
            raise FormatError(f"{where} has both 'cubeId' and 'cube'; expected one of them")
        if "cube" in obj:
            fmt = TagFormat.CUBE_KEY
            cube = obj["cube"]
        elif "cubeId" in obj:
            cube = obj["cubeId"]
        else:
            raise FormatError(f"{where} has no 'cubeId': {obj!r}")
        replicated = obj.get("replicated", False)
        if "replicated" in obj and fmt is TagFormat.CURRENT:
            fmt = TagFormat.REPLICATED_FLAG
        if not isinstance(replicated, bool):
            raise FormatError(f"{where}: 'replicated' must be true or false, got {replicated!r}")
        _check_cube_string(cube, f"{where}: cube id")
        blocks.append(
            Block(
                cube=cube,
                min_weight=_json_int(obj, "minWeight", MIN_WEIGHT, MIN_WEIGHT, MAX_WEIGHT, where),
                max_weight=_json_int(obj, "maxWeight", MAX_WEIGHT, MIN_WEIGHT, MAX_WEIGHT, where),
                element_count=_json_int(obj, "elementCount", 0, 0, _MAX_LONG, where),
                replicated=replicated,
            )
        )
    return tuple(blocks), fmt


def _json_int(obj: dict, key: str, default: int, lo: int, hi: int, where: str) -> int:
    """A JSON integer field in [lo, hi]; qbeast-spark's defaults apply when the key is absent."""
    if key not in obj:
        return default
    value = obj[key]
    _check_int(value, lo, hi, f"{where}: {key!r}")
    return value


def _decode_legacy(tags: Mapping[str, str]) -> Block:
    missing = [k for k in _LEGACY_KEYS if k not in tags]
    if missing:
        raise FormatError(f"pre-0.6 block tags lack {missing}; found keys {sorted(tags)}")
    state = tags["state"]
    if state not in _LEGACY_STATES:
        raise FormatError(f"pre-0.6 tag 'state' is {state!r}; allowed values are {_LEGACY_STATES}")
    _check_cube_string(tags["cube"], "pre-0.6 tag 'cube'")
    return Block(
        cube=tags["cube"],
        min_weight=_legacy_int(tags, "minWeight", MIN_WEIGHT, MAX_WEIGHT),
        max_weight=_legacy_int(tags, "maxWeight", MIN_WEIGHT, MAX_WEIGHT),
        element_count=_legacy_int(tags, "elementCount", 0, _MAX_LONG),
        replicated=state in _LEGACY_REPLICATED_STATES,
    )


def _legacy_int(tags: Mapping[str, str], key: str, lo: int, hi: int) -> int:
    text = tags[key]
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise FormatError(f"pre-0.6 tag {key!r} must be a decimal integer string, got {text!r}")
    value = int(text)
    if not lo <= value <= hi:
        raise FormatError(f"pre-0.6 tag {key!r} = {value} is outside [{lo}, {hi}]")
    return value


def _check_cube_string(cube: object, what: str) -> None:
    if not isinstance(cube, str):
        raise FormatError(f"{what} must be a string, got {cube!r}")
    bad = set(cube) - _ALPHABET_SET
    if bad:
        raise FormatError(f"{what} {cube!r} has characters {sorted(bad)} outside {ALPHABET!r}")


def _check_int(value: object, lo: int, hi: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FormatError(f"{what} must be an int, got {value!r}")
    if not lo <= value <= hi:
        raise FormatError(f"{what} = {value} is outside [{lo}, {hi}]")
