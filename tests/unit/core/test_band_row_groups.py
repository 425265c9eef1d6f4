"""Weight bands as row groups: the footer record, the prefix a sample reads, and the write plan
that makes one piece per (rollup file, band)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast.core.band_row_groups import (
    FOOTER_KEY,
    Piece,
    PieceLayout,
    decode_pieces,
    encode_pieces,
)
from qbeast.core.cube_id import CubeId
from qbeast.core.weight import weight_from_fraction
from qbeast.core.weight_bands import BAND_COUNT, band_layout, band_of
from qbeast.errors import InvalidOptionError
from qbeast.index.assignment import build_write_plan

W = [weight_from_fraction(f) for f in (0.01, 0.1, 0.5)]


def test_the_record_round_trips_and_bad_text_is_no_record():
    pieces = (Piece(-2_000_000_000, 10), Piece(W[1], 20))
    assert decode_pieces(encode_pieces(pieces)) == pieces
    for bad in (None, "", "x", "[]", "[[1]]", "[[1, 0]]", '{"a": 1}'):
        assert decode_pieces(bad) is None, bad


def test_the_prefix_ends_after_the_last_piece_lighter_than_the_bound():
    layout = PieceLayout((Piece(W[0] - 5, 10), Piece(W[1], 20), Piece(W[2], 5)),
                         (100, 250, 300), (10, 20, 5))
    assert layout.prefix_bytes(W[1]) == 100  # only the first piece can hold weights < W[1]
    assert layout.prefix_bytes(W[1] + 1) == 250
    assert layout.prefix_bytes(W[2] + 1) is None  # the last piece: the whole file
    assert layout.prefix_bytes(W[0] - 10) is None  # no piece: read whole, never less
    # a piece boundary inside a row group: not this layout's file, read whole
    assert PieceLayout((Piece(0, 10), Piece(W[1], 20)), (250, 300), (15, 15)).prefix_bytes(W[0]) is None


def test_the_footer_layout_of_a_real_file(tmp_path):
    path = str(tmp_path / "f.parquet")
    table = pa.table({"v": np.arange(300, dtype=np.int64)})
    record = encode_pieces([Piece(W[0], 100), Piece(W[1], 200)])
    with pq.ParquetWriter(path, table.schema.with_metadata({FOOTER_KEY: record})) as writer:
        writer.write_table(table.slice(0, 100), row_group_size=100)
        writer.write_table(table.slice(100, 100), row_group_size=100)
        writer.write_table(table.slice(200, 100), row_group_size=100)
    layout = PieceLayout.of(pq.read_metadata(path))
    assert layout is not None and layout.group_rows == (100, 100, 100)
    end = layout.prefix_bytes(W[1])
    assert end == layout.group_ends[0] < layout.group_ends[1]
    assert PieceLayout.of(pq.read_metadata(path)).prefix_bytes(W[2]) is None
    pq.write_table(table, str(tmp_path / "plain.parquet"))
    assert PieceLayout.of(pq.read_metadata(str(tmp_path / "plain.parquet"))) is None


def test_layout_names_are_checked():
    assert band_layout(True) == band_layout("true") == "files"
    assert band_layout(False) == "false" and band_layout("rowGroups") == "rowGroups"
    with pytest.raises(InvalidOptionError, match="rowGroups, files, false"):
        band_layout("rows")


def _plan_inputs():
    root = CubeId.root(2)
    weights = {root: weight_from_fraction(0.05)}
    sizes = {root: 5_000}
    for child in root.children():
        weights[child] = weight_from_fraction(0.3)
        sizes[child] = 30_000
        for grandchild in child.children():
            sizes[grandchild] = 40_000
    return weights, sizes


def _plan(layout):
    return build_write_plan(2, *_plan_inputs(), 20_000, weight_bands=layout, table_rows=300_000)


def test_pieces_split_the_rollup_files_by_band_in_band_order():
    pieces, plain = _plan("rowGroups"), _plan("false")
    owners = pieces.row_group_files
    assert owners is not None and len(owners) == pieces.file_count > plain.file_count
    assert list(owners) == sorted(owners) and set(owners) == set(range(plain.file_count))
    rng = np.random.default_rng(3)
    coords = rng.random((50_000, 2))
    weights = rng.integers(-2**31, 2**31 - 1, 50_000).astype(np.int32)
    cubes, files = pieces.assign(coords, weights)
    plain_cubes, plain_files = plain.assign(coords, weights)
    assert np.array_equal(cubes, plain_cubes)  # same cubes, same rollup files
    assert np.array_equal(owners[files], plain_files)
    # within a file, a heavier band never sits in an earlier piece than a lighter one
    bands = band_of(weights.astype(np.int64))
    for owner in range(plain.file_count):
        mine = owners[files] == owner
        order = np.argsort(files[mine], kind="stable")
        assert np.all(np.diff(files[mine][order]) >= 0)
        by_piece = [bands[mine][files[mine] == p] for p in np.unique(files[mine])]
        for lighter, heavier in zip(by_piece, by_piece[1:]):
            assert lighter.max() <= heavier.min()
    assert pieces.band_files is not None and pieces.band_files.shape[1] == BAND_COUNT


def test_every_band_is_a_piece_of_its_own_whatever_the_table_size():
    """Pieces are row groups: even the lightest bands of the root file stay apart (a shared piece
    would be read whole by every sample below its top edge, in every later table version), and
    the plan does not depend on the table's size when the file is written."""
    small, large = _plan("rowGroups"), build_write_plan(
        2, *_plan_inputs(), 20_000, weight_bands="rowGroups", table_rows=300_000_000)
    assert np.array_equal(small.row_group_files, large.row_group_files)
    rng = np.random.default_rng(5)
    coords = rng.random((50_000, 2))
    weights = rng.integers(-2**31, 2**31 - 1, 50_000).astype(np.int32)
    _, files = small.assign(coords, weights)
    bands = band_of(weights.astype(np.int64))
    for piece in np.unique(files):
        assert len(np.unique(bands[files == piece])) == 1, piece
    root_file = small.row_group_files[files[np.argmin(weights)]]
    # the root's file starts at the lightest band: one piece per band, all ten of them
    assert int((small.row_group_files == root_file).sum()) == BAND_COUNT


def test_rows_regroup_into_the_pieces_of_the_old_file():
    from qbeast.core.band_row_groups import Piece, split_by_floors

    floors = [-100, 0, 50]
    weights = np.array([60, -90, 10, 55, -100, 70, -5, 49, -200])
    order, pieces = split_by_floors(weights, floors)
    regrouped = weights[order]
    # lighter than every floor joins the first piece; arrival order kept within a piece
    assert regrouped.tolist() == [-90, -100, -5, -200, 10, 49, 60, 55, 70]
    assert pieces == [Piece(-200, 4), Piece(10, 2), Piece(55, 3)]
    # a piece without rows left disappears; the others keep disjoint increasing ranges
    order, pieces = split_by_floors(np.array([70, -50]), floors)
    assert pieces == [Piece(-50, 1), Piece(70, 1)] and order.tolist() == [1, 0]
