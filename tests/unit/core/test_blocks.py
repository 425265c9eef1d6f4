"""Block tags of every generation (FORMAT §5, §4.4) and the real qbeast-spark logs."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from qbeast.core.blocks import (
    Block,
    DecodedTags,
    TagFormat,
    decode_tags,
    encode_blocks,
    encode_tags,
    staging_block,
)
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import FormatError

ROOT_LEAF = '[{"cubeId":"","minWeight":2147483647,"maxWeight":2147483647,"elementCount":1}]'


def test_exact_string_of_a_root_leaf_block():
    # DeltaQbeastFileUtilsTest (FORMAT §11).
    tags = encode_tags(1, [Block("", MAX_WEIGHT, MAX_WEIGHT, 1)])
    assert tags == {"revision": "1", "blocks": ROOT_LEAF}


def test_encode_key_order_and_no_replicated():
    text = encode_blocks([Block("w", -1717927374, -1269647486, 10111, replicated=True)])
    assert text == (
        '[{"cubeId":"w","minWeight":-1717927374,"maxWeight":-1269647486,"elementCount":10111}]'
    )
    assert '"cube"' not in text and "replicated" not in text


def test_decode_current_format():
    decoded = decode_tags({"revision": "3", "blocks": ROOT_LEAF})
    assert decoded == DecodedTags(3, (Block("", MAX_WEIGHT, MAX_WEIGHT, 1),), TagFormat.CURRENT)
    assert not decoded.is_staging


def test_decode_06_07_replicated_flag():
    text = '[{"cubeId":"gA","minWeight":-5,"maxWeight":7,"elementCount":2,"replicated":true}]'
    decoded = decode_tags({"revision": "1", "blocks": text})
    assert decoded.format is TagFormat.REPLICATED_FLAG
    assert decoded.blocks == (Block("gA", -5, 7, 2, replicated=True),)


def test_decode_cube_key_of_the_format_document():
    text = '[{"cube":"w","minWeight":1,"maxWeight":2,"elementCount":3}]'
    decoded = decode_tags({"revision": "2", "blocks": text})
    assert decoded.format is TagFormat.CUBE_KEY
    assert decoded.blocks == (Block("w", 1, 2, 3),)
    # Re-encoding writes the key qbeast-spark reads.
    assert json.loads(encode_tags(2, decoded.blocks)["blocks"])[0]["cubeId"] == "w"


def test_missing_block_fields_take_qbeast_spark_defaults():
    decoded = decode_tags({"revision": "1", "blocks": '[{"cubeId":"Q"}]'})
    assert decoded.blocks == (Block("Q", MIN_WEIGHT, MAX_WEIGHT, 0),)


@pytest.mark.parametrize(
    "state, replicated", [("FLOODED", False), ("ANNOUNCED", True), ("REPLICATED", True)]
)
def test_decode_pre06_flat_tags(state, replicated):
    tags = {
        "state": state,
        "cube": "g",
        "revision": "1",
        "elementCount": "10111",
        "minWeight": "-1717927374",
        "maxWeight": "-1269647486",
    }
    decoded = decode_tags(tags)
    assert decoded.format is TagFormat.LEGACY_FLAT
    assert decoded.revision_id == 1
    assert decoded.blocks == (Block("g", -1717927374, -1269647486, 10111, replicated),)


@pytest.mark.parametrize(
    "tags", [None, {}, {"revision": "0"}, {"revision": "0", "blocks": ROOT_LEAF}, {"other": "x"}]
)
def test_staging_forms(tags):
    decoded = decode_tags(tags)
    assert decoded.format is TagFormat.STAGING
    assert decoded.revision_id == 0 and decoded.is_staging
    assert decoded.blocks == (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),) == (staging_block(),)


def test_revision_without_blocks_is_one_root_block_of_that_revision():
    decoded = decode_tags({"revision": "4"})
    assert decoded == DecodedTags(4, (staging_block(),), TagFormat.NO_BLOCKS)


def test_unrelated_tags_are_ignored():
    decoded = decode_tags({"revision": "1", "blocks": ROOT_LEAF, "INSERTION_TIME": "123"})
    assert decoded.format is TagFormat.CURRENT


@pytest.mark.parametrize(
    "blocks, message",
    [
        ("not json", "not valid JSON"),
        ('{"cubeId":""}', "JSON array"),
        ("[]", "empty array"),
        ("[1]", "JSON object"),
        ('[{"cubeId":"","foo":1}]', r"unknown key\(s\) \['foo'\]"),
        ('[{"cubeId":"","cube":""}]', "both 'cubeId' and 'cube'"),
        ('[{"minWeight":1}]', "no 'cubeId'"),
        ('[{"cubeId":"","minWeight":1.5}]', "'minWeight' must be an int"),
        ('[{"cubeId":"","maxWeight":"7"}]', "'maxWeight' must be an int"),
        ('[{"cubeId":"","minWeight":true}]', "'minWeight' must be an int"),
        ('[{"cubeId":"","maxWeight":2147483648}]', "outside"),
        ('[{"cubeId":"","elementCount":-1}]', "outside"),
        ('[{"cubeId":5}]', "cube id must be a string"),
        ('[{"cubeId":"w!"}]', "outside"),
        ('[{"cubeId":"","replicated":"no"}]', "'replicated' must be true or false"),
    ],
)
def test_malformed_blocks(blocks, message):
    with pytest.raises(FormatError, match=message):
        decode_tags({"revision": "1", "blocks": blocks})


@pytest.mark.parametrize(
    "tags, message",
    [
        ({"revision": "x1", "blocks": ROOT_LEAF}, "'revision' must be"),
        ({"revision": "-1", "blocks": ROOT_LEAF}, "'revision' must be"),
        ({"revision": "1", "cube": "g", "state": "FLOODED"}, "lack"),
        (
            {"revision": "1", "cube": "g", "state": "GONE", "elementCount": "1",
             "minWeight": "1", "maxWeight": "2"},
            "allowed values",
        ),
        (
            {"revision": "1", "cube": "g", "state": "FLOODED", "elementCount": "1_0",
             "minWeight": "1", "maxWeight": "2"},
            "'elementCount' must be a decimal integer",
        ),
        (
            {"revision": "1", "cube": "g", "state": "FLOODED", "elementCount": "1",
             "minWeight": "1", "maxWeight": "9999999999"},
            "outside",
        ),
    ],
)
def test_malformed_tags(tags, message):
    with pytest.raises(FormatError, match=message):
        decode_tags(tags)


def test_encode_rejects_bad_input():
    with pytest.raises(FormatError, match="at least one block"):
        encode_tags(1, [])
    with pytest.raises(FormatError, match="revision_id"):
        encode_tags(-1, [staging_block()])
    with pytest.raises(FormatError, match="Block objects"):
        encode_blocks([{"cubeId": ""}])  # type: ignore[list-item]
    with pytest.raises(FormatError, match="min_weight"):
        Block("", MIN_WEIGHT - 1, 0, 0)


# -- every tag of the real logs ---------------------------------------------------------------


def _fixture_tags(root: Path) -> list[tuple[str, dict]]:
    """(where, tags) of every add/remove action in the JSON commits and checkpoints."""
    found = []
    for log in sorted(root.glob("*/_delta_log/*.json")):
        for n, line in enumerate(log.read_text().splitlines()):
            action = json.loads(line)
            for kind in ("add", "remove"):
                if kind in action and action[kind].get("tags") is not None:
                    found.append((f"{log}:{n}:{kind}", action[kind]["tags"]))
    for checkpoint in sorted(root.glob("*/_delta_log/*.checkpoint.parquet")):
        table = pq.read_table(checkpoint, columns=["add", "remove"])
        for kind in ("add", "remove"):
            for i, row in enumerate(table.column(kind).to_pylist()):
                if row is not None and row.get("tags") is not None:
                    found.append((f"{checkpoint}:{i}:{kind}", dict(row["tags"])))
    return found


def _semantic(blocks: list[dict]) -> list[dict]:
    """Block objects without the write-optional ``replicated`` flag when it is false."""
    return [{k: v for k, v in b.items() if not (k == "replicated" and v is False)} for b in blocks]


def test_every_fixture_tag_decodes_and_re_encodes(qbeast_fixtures):
    tags_found = _fixture_tags(qbeast_fixtures)
    formats = set()
    assert len(tags_found) > 300  # the fixtures hold hundreds of tagged actions
    for where, tags in tags_found:
        decoded = decode_tags(tags)
        formats.add(decoded.format)
        assert decoded.revision_id == int(tags["revision"]), where
        encoded = encode_tags(decoded.revision_id, decoded.blocks)
        assert encoded["revision"] == tags["revision"], where
        again = decode_tags(encoded)
        assert again.format is TagFormat.CURRENT
        assert [(b.cube, b.min_weight, b.max_weight, b.element_count) for b in again.blocks] == [
            (b.cube, b.min_weight, b.max_weight, b.element_count) for b in decoded.blocks
        ], where
        if "blocks" in tags:
            assert json.loads(encoded["blocks"]) == _semantic(json.loads(tags["blocks"])), where
        else:
            (block,) = json.loads(encoded["blocks"])
            assert block == {
                "cubeId": tags["cube"],
                "minWeight": int(tags["minWeight"]),
                "maxWeight": int(tags["maxWeight"]),
                "elementCount": int(tags["elementCount"]),
            }, where
            assert decoded.blocks[0].replicated == (tags["state"] in ("ANNOUNCED", "REPLICATED"))
    assert formats == {TagFormat.REPLICATED_FLAG, TagFormat.LEGACY_FLAT}


def test_v07_fixture_holds_63_blocks_in_16_files(qbeast_fixtures):
    log = qbeast_fixtures / "v07-ecommerce-300k" / "_delta_log" / "00000000000000000000.json"
    adds = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    blocks = [b for a in adds for b in decode_tags(a["tags"]).blocks]
    assert len(adds) == 16 and len(blocks) == 63
    assert sum(b.element_count for b in blocks) == 300_000
