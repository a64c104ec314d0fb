"""Shapes: parsing and XLA's byte sizes (ShapeUtil::ByteSizeOf, 8-byte tuple pointers)."""

import pytest

from hloscope.ir.attributes import decode_replica_groups
from hloscope.ir.shape import UNBOUNDED, parse_array_shape, parse_shape


@pytest.mark.parametrize(
    "text, size",
    [
        ("f32[2,3]{1,0}", 24),
        ("bf16[128]", 256),
        ("pred[10]", 10),
        ("s4[10]", 10),          # sub-byte types take a byte each unless packed
        ("s4[10]{0:E(4)}", 5),   # packed: ceil(10 * 4 / 8)
        ("f8e4m3fn[16]", 16),
        ("c128[2]", 32),
        ("token[]", 0),
        ("f32[]", 4),
        ("f32[<=8]", 32),        # bounded dynamic: at its bound
    ],
)
def test_array_byte_sizes(text, size):
    assert parse_array_shape(text).byte_size == size


def test_tuple_shape_is_a_pointer_table():
    t = parse_shape("(f32[2], (s32[], token[]), bf16[4]{0})")
    assert t.is_tuple and t.byte_size == 3 * 8
    assert [i for i, _ in t.leaves()] == [(0,), (1, 0), (1, 1), (2,)]
    assert t.total_byte_size == 8 + 4 + 0 + 8
    assert t.at((1, 0)).element_type == "s32"


def test_dynamic_and_layout_details():
    s = parse_array_shape("f32[?,<=4]{1,0:T(8,128)S(5)}")
    assert s.dimensions == (UNBOUNDED, 4) and s.dynamic == (True, True)
    assert s.layout.minor_to_major == (1, 0) and s.layout.memory_space == 5
    assert parse_array_shape("f32[2]") is parse_array_shape("f32[2]")  # interned


@pytest.mark.parametrize(
    "text, groups",
    [
        ("{{0,1},{2,3}}", ((0, 1), (2, 3))),
        # XLA's documented example: [4,2]<=[2,4]T(1,0) is {{0,4},{1,5},{2,6},{3,7}}.
        ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7))),
        ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7))),
        # Along axis y of a 2x2 row-major mesh: devices that share x.
        ("mesh['x'=2,'y'=2] {'y'}", ((0, 1), (2, 3))),
        ("mesh['x'=2,'y'=2] {'x'}", ((0, 2), (1, 3))),
        # device_ids permute mesh positions: position k holds device_ids[k] = [0,2,1,3][k].
        ("mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)) {'y'}", ((0, 2), (1, 3))),
    ],
)
def test_replica_groups_in_all_three_forms(text, groups):
    assert decode_replica_groups(text).groups == groups


def test_empty_replica_groups_mean_everyone():
    rg = decode_replica_groups("{}")
    assert rg.groups is None and rg.form == "empty"
