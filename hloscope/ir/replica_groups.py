"""Replica groups in XLA's three printed forms, read and expanded as XLA reads and expands them.

XLA's parser (ParseCollectiveDeviceListBase in xla/hlo/parser/hlo_parser.cc) reads

- explicit lists `{{0,1},{2,3}}` (CollectiveDeviceList; `{}`: every participant, one group);
- iota lists `[groups,size]<=[dims]T(perm)` (IotaReplicaGroupList: iota over `dims`,
  transposed by `perm`, cut into `groups` rows of `size`);
- mesh axes `mesh['x'=4,'y'=2], device_ids=(...) {'x', 'y':(1)2}` (MeshAxesReplicaGroupList:
  the devices of a row-major mesh that differ only along the listed axes or sub-axes form a
  group; `device_ids` says which device sits at each mesh position).

What XLA refuses, with an error or a failed CHECK, is refused here; what any XLA release
hloscope reads accepts (jaxlib 0.10.2's and the newest differ: see docs of `_read_mesh`) is
accepted. The number of groups and their size come from the text; the groups themselves
are listed only when asked for (`ReplicaGroups.groups`), and not at all where XLA's own
expansion would be undefined (sizes that disagree, a permutation that is none).
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field

from ..encode import Encoded, as_json
from .values import AttributeValueError, Reader

MAX_PARTICIPANTS = 1 << 24
"""Most devices `ReplicaGroups.groups` lists (16M; the largest systems have a few hundred
thousand). The iota and mesh forms describe their groups in a few characters: a corrupted
`[1,99999999999]<=[99999999999]` is read (XLA reads it) but its groups are not listed."""


@dataclass(frozen=True, slots=True)
class ReplicaGroups(Encoded):
    """Replica groups in any of XLA's three printed forms (see the module docstring)."""

    form: str
    """`explicit`, `iota`, `mesh` or `empty`."""
    text: str = field(metadata=as_json(omit=True))
    num_groups: int | None
    """XLA's num_replica_groups(); None for `{}` (all participants, count unknown here) and
    for a mesh whose groups have no device (XLA would divide by zero)."""
    group_size: int | None
    """XLA's num_devices_per_group() (the largest group, for explicit groups of unequal
    sizes); None for `{}`."""
    spec: tuple = field(default=(), repr=False, compare=False, metadata=as_json(omit=True))
    """What `groups` lists the ids from: the explicit groups, or the iota or mesh parameters."""

    @property
    def groups(self) -> tuple[tuple[int, ...], ...] | None:
        """Device or replica ids per group, in XLA's order; None for `{}`, and where XLA's
        expansion is undefined or the groups span more than MAX_PARTICIPANTS devices."""
        if self.form == "empty":
            return None
        if self.form == "explicit":
            return self.spec
        if self.form == "iota":
            return _iota_groups(*self.spec)
        return _mesh_groups(*self.spec)


def _product(sizes) -> int:
    total = 1
    for n in sizes:
        total *= n
    return total


def _c_div(a: int, b: int) -> int:
    """C++'s integer division (truncating toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _listable(sizes) -> bool:
    return all(n >= 0 for n in sizes) and _product(sizes) <= MAX_PARTICIPANTS


def _is_permutation(perm, rank: int) -> bool:
    return sorted(perm) == list(range(rank))


def _iota(reshape: tuple[int, ...], perm: tuple[int, ...]) -> list[int]:
    """iota(product(reshape)) reshaped to `reshape` and transposed by `perm`, flattened."""
    strides = [1] * len(reshape)
    for k in range(len(reshape) - 2, -1, -1):
        strides[k] = strides[k + 1] * reshape[k + 1]
    moved = [strides[p] for p in perm]
    return [sum(i * s for i, s in zip(idx, moved))
            for idx in itertools.product(*(range(reshape[p]) for p in perm))]


# ─── reading ────────────────────────────────────────────────────────────────────────────

# The forms as XLA prints them, read without the token-by-token reader (most values).
_PLAIN_EXPLICIT = re.compile(r"\{(?:\{[0-9]+(?:,[0-9]+)*\}(?:,\{[0-9]+(?:,[0-9]+)*\})*)?\}")
_PLAIN_IOTA = re.compile(r"\[([0-9]+),([0-9]+)\]<=\[([0-9]+(?:,[0-9]+)*)\](?:T\(([0-9]+(?:,[0-9]+)*)\))?")
_IDS = re.compile(r"[0-9]+")
_LONG_ID = re.compile(r"[0-9]{19}")
"""An id that may not fit in int64 as written (XLA reads 2^64 - 1 as -1): read token by token."""


@functools.lru_cache(maxsize=1024)
def decode_replica_groups(text: str) -> ReplicaGroups:
    """Any of the three forms; AttributeValueError (with where in `text`) for a value XLA's
    parser refuses."""
    text = text.strip()
    if _PLAIN_EXPLICIT.fullmatch(text) is not None and _LONG_ID.search(text) is None:
        if text == "{}":
            return ReplicaGroups("empty", text, None, None)
        groups = tuple(tuple(map(int, _IDS.findall(g))) for g in text[1:-1].split("},{"))
        return ReplicaGroups("explicit", text, len(groups), max(len(g) for g in groups), groups)
    m = _PLAIN_IOTA.fullmatch(text)
    if m is not None and _LONG_ID.search(text) is None:
        reshape = tuple(map(int, m.group(3).split(",")))
        if (m.group(4) is None) == (len(reshape) == 1):
            perm = tuple(map(int, m.group(4).split(","))) if m.group(4) else (0,)
            if all(p < len(reshape) for p in perm):
                return _iota_form(text, int(m.group(1)), int(m.group(2)), reshape, perm)
    reader = Reader(text)
    if reader.kind == "{":
        rg = _read_explicit(reader, text)
    elif reader.kind == "ident" and reader.token.text in ("mesh", "maximal_mesh"):
        rg = _read_mesh(reader, text)
    else:
        rg = _read_iota(reader, text)
    if not reader.at_end():
        raise reader.error(f"unexpected {reader.token.text[:20] or reader.kind!r} after the replica groups")
    return rg


def _read_explicit(r: Reader, text: str) -> ReplicaGroups:
    """`{` (`{` ints `}` (`,` `{` ints `}`)*)? `}`: XLA's ParseInt64ListList."""
    r.expect("{", "expects '{'")
    groups = []
    if r.kind != "}":
        groups.append(tuple(r.int_list("{", "}", "device ids (integers)")))
        while r.eat(","):
            groups.append(tuple(r.int_list("{", "}", "device ids (integers)")))
    r.expect("}", "expects '}' to end the replica groups")
    if not groups:
        return ReplicaGroups("empty", text, None, None)
    return ReplicaGroups("explicit", text, len(groups), max(len(g) for g in groups), tuple(groups))


def _read_iota_array(r: Reader) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`[dims]` then, for more than one dimension, `T(perm)` with every entry below their
    number (XLA's ParseIotaTileAssignmentArray; a one-dimensional iota takes no T)."""
    reshape = tuple(r.nonempty_int_list("[", "]", "the iota's dimensions (integers)"))
    if len(reshape) == 1:
        if r.kind == "ident" and r.token.text == "T":
            raise r.error("an iota of one dimension takes no T(...)")
        return reshape, (0,)
    if not (r.kind == "ident" and r.token.text == "T"):
        raise r.error("expects 'T(' and a permutation after an iota of more than one dimension")
    r.next()
    r.expect("(", "expects 'T(' and a permutation after an iota of more than one dimension")
    perm = []
    while True:
        t = r.token
        p = r.int64("a dimension number")
        if not 0 <= p < len(reshape):
            raise AttributeValueError(f"T(...) holds {p}: expects dimension numbers in [0, {len(reshape)})", t.at)
        perm.append(p)
        if not r.eat(","):
            break
    r.expect(")", "expects ')' to end T(...)")
    return reshape, tuple(perm)


def _read_iota(r: Reader, text: str) -> ReplicaGroups:
    """`[groups,size]<=[dims]T(perm)` (XLA's ParseTileAssignment, then two dimensions)."""
    if r.kind != "[":
        raise r.error("expects {{ids...}, ...}, [groups,size]<=[dims] or mesh[...]")
    shape = r.nonempty_int_list("[", "]", "group dimensions (integers)")
    r.expect("leq", "expects '<=' after the group dimensions")
    reshape, perm = _read_iota_array(r)
    if len(shape) != 2:
        raise AttributeValueError("expects [number of groups, group size] before '<='", 0)
    return _iota_form(text, shape[0], shape[1], reshape, perm)


def _iota_form(text, groups: int, size: int, reshape: tuple[int, ...], perm: tuple[int, ...]) -> ReplicaGroups:
    return ReplicaGroups("iota", text, groups, size, ((groups, size), reshape, perm))


def _iota_groups(shape: tuple[int, int], reshape: tuple[int, ...], perm: tuple[int, ...]):
    """XLA's IotaReplicaGroupList::flattened_replica_groups; None where it is undefined
    (jaxlib 0.10.2 reads `[2,2]<=[5]` and `T(0,0)`; its expansion then fails a CHECK or
    reads memory it does not own)."""
    groups, size = shape
    if (groups < 0 or size < 0 or not _listable(reshape) or groups * size != _product(reshape)
            or not _is_permutation(perm, len(reshape))):
        return None
    if size == 0:
        return tuple(() for _ in range(groups))
    flat = _iota(reshape, perm)
    return tuple(tuple(flat[i:i + size]) for i in range(0, len(flat), size))


@dataclass(frozen=True, slots=True)
class _Mesh:
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    devices: tuple
    """("iota",) for the row-major identity, ("iota", reshape, perm), ("list", ids), or
    ("maximal", id) / ("empty",) for meshes without axes."""
    quirk: str = ""
    """What of the text only jaxlib 0.10.2's XLA reads (the newest refuses it), if anything."""

    @property
    def num_elements(self) -> int:
        if self.devices[0] == "maximal":
            return 1
        if self.devices[0] == "empty":
            return 0
        return _product(self.sizes)


def _read_mesh(r: Reader, text: str) -> ReplicaGroups:
    """`mesh[...]` or `maximal_mesh[device_id=N]`, then `{axes}` (XLA's ParseMesh and
    ParseAxisRefList, then the checks of MeshAxesReplicaGroupList's constructor).

    Where XLA releases differ, the more lenient one is followed (a false rejection is worse
    than a missed check): jaxlib 0.10.2 takes `mesh[...], {...}` (its comma eaten whether or
    not `device_ids=` follows) and device_ids whose iota size differs from the mesh's; the
    newest XLA takes groups of one device (`{}`, or axes of size 1), which 0.10.2 refuses."""
    mesh = _read_mesh_devices(r)
    axes_at = r.token.at
    axes = _read_axes(r, mesh)
    _validate_axes(axes, mesh)
    size = 1
    for index, sub in axes:
        size *= sub[1] if sub else mesh.sizes[index]
    if size <= 1 and mesh.quirk:
        # Read by 0.10.2 only, groups of one device by the newest only: by neither together.
        raise AttributeValueError(f"groups of {size} device(s) with {mesh.quirk}: no XLA release reads both", axes_at)
    groups = _c_div(mesh.num_elements, size) if size else None
    return ReplicaGroups("mesh", text, groups, size, (mesh, tuple(axes)))


def _read_mesh_devices(r: Reader) -> _Mesh:
    kind = r.next().text
    if kind == "maximal_mesh":
        r.expect("[", "expects '[' after maximal_mesh")
        t = r.token
        if not (t.kind == "attr" and t.text == "device_id"):
            raise r.error("expects device_id= in maximal_mesh")
        r.next()
        device = r.int64("a device id")
        r.expect("]", "expects ']' to end maximal_mesh")
        return _Mesh((), (), ("maximal", device))
    r.expect("[", "expects '[' after mesh")
    names: list[str] = []
    sizes: list[int] = []
    name_at: list[int] = []
    if r.kind != "]":
        while True:
            t = r.expect("string", "expects a quoted axis name")
            r.expect("=", "expects '=' after the axis name")
            names.append(t.text)
            name_at.append(t.at)
            sizes.append(r.int64("the axis size (an integer)"))
            if not r.eat(","):
                break
    r.expect("]", "expects ']' to end the mesh axes")
    if not names:
        return _Mesh((), (), ("empty",))
    for k, name in enumerate(names):
        if name in names[:k]:  # Mesh::Validate (a failed CHECK in XLA)
            raise AttributeValueError(f"mesh axis {name!r} is named twice", name_at[k])
    devices: tuple = ("iota",)
    quirk = ""
    if r.eat(","):
        # jaxlib 0.10.2 eats the comma and a `name=` after it, and reads device ids only
        # when the name is device_ids; anything else leaves the plain row-major mesh.
        quirk = "a comma after the mesh and no device_ids"
        if r.kind == "attr":
            name = r.next().text
            if name == "device_ids":
                devices = _read_device_ids(r, sizes)
                quirk = ""
                if devices[0] == "iota" and _product(devices[1]) != _product(sizes):
                    quirk = "device_ids of another size than the mesh"
    return _Mesh(tuple(names), tuple(sizes), devices, quirk)


def _read_device_ids(r: Reader, sizes: list[int]) -> tuple:
    r.expect("(", "expects '(' after device_ids=")
    if r.kind == "[":
        reshape, perm = _read_iota_array(r)
        r.expect(")", "expects ')' to end device_ids")
        return ("iota", reshape, perm)
    at = r.token.at
    ids = _device_list(r)
    total = _product(sizes)
    if any(n < 0 for n in sizes) or len(ids) != total:
        raise AttributeValueError(f"device_ids lists {len(ids)} devices for a mesh of {total}", at)
    # Mesh::Validate (a failed CHECK in XLA): a permutation of 0..n-1 other than the identity.
    if any(d < 0 for d in ids):
        raise AttributeValueError("device_ids must be non-negative", at)
    if list(ids) == list(range(len(ids))):
        raise AttributeValueError("device_ids list the identity [0,1,2,...]: XLA takes that only as a plain "
                                  "mesh, without device_ids", at)
    if sorted(ids) != list(range(len(ids))):
        raise AttributeValueError("device_ids must be a permutation of [0,1,2,...]", at)
    return ("list", tuple(ids))


def _device_list(r: Reader) -> list[int]:
    """`d (, d)*` or nothing, then `)` (the `(` was read)."""
    out = []
    if r.kind != ")":
        out.append(r.int64("a device id"))
        while r.eat(","):
            out.append(r.int64("a device id"))
    r.expect(")", "expects ')' to end device_ids")
    return out


def _read_axes(r: Reader, mesh: _Mesh) -> list[tuple[int, tuple[int, int] | None]]:
    """`{` (axis (`,` axis)*)? `}`; an axis is `'name'` or `'index'`, then `:(pre)size`
    for a sub-axis (XLA's ParseAxisRef)."""
    r.expect("{", "expects '{' and the mesh axes of the groups")
    axes: list[tuple[int, tuple[int, int] | None]] = []
    if r.kind != "}":
        while True:
            axes.append(_read_axis(r, mesh))
            if not r.eat(","):
                break
    r.expect("}", "expects '}' to end the mesh axes")
    return axes


def _simple_atoi(text: str) -> int | None:
    """absl::SimpleAtoi: an optional sign and decimal digits, blanks around allowed."""
    m = re.fullmatch(r"\s*([+-]?[0-9]+)\s*", text)
    return int(m.group(1)) if m else None


def _read_axis(r: Reader, mesh: _Mesh) -> tuple[int, tuple[int, int] | None]:
    t = r.token
    if t.kind != "string":
        raise r.error("expects a quoted mesh axis name")
    r.next()
    if t.text in mesh.names:
        index = mesh.names.index(t.text)
    else:
        index = _simple_atoi(t.text)
        if index is None:
            raise AttributeValueError(f"{t.text!r} is not an axis of the mesh", t.at)
    if not 0 <= index < len(mesh.names):
        raise AttributeValueError(f"axis index {index} is out of bounds for a mesh of {len(mesh.names)} axes", t.at)
    if not r.eat(":"):
        return index, None
    r.expect("(", "expects '(' before the pre-size of a sub-axis")
    at = r.token.at
    pre = r.int64("the sub-axis pre-size (an integer)")
    r.expect(")", "expects ')' after the pre-size of a sub-axis")
    size_at = r.token.at
    size = r.int64("the sub-axis size (an integer)")
    if pre <= 0:  # AxisRef's constructor (a failed CHECK in XLA)
        raise AttributeValueError("a sub-axis pre-size must be at least 1", at)
    if size <= 1:
        raise AttributeValueError("a sub-axis size must be more than 1", size_at)
    return index, (pre, size)


def _validate_axes(axes, mesh: _Mesh) -> None:
    """ValidateSpanOfAxes (xla/hlo/ir/mesh_and_axis.cc), which MeshAxesReplicaGroupList's
    constructor CHECKs: sub-axes that divide their axis, no two axes that overlap or cannot
    coexist, no two neighbours that merge into one."""
    for index, sub in axes:
        if sub is None:
            continue
        pre, size = sub
        full = mesh.sizes[index]
        if full % (pre * size) != 0:
            raise AttributeValueError(f"sub-axis {_axis_text(mesh, index, sub)}: {pre}x{size} does not divide the "
                                      f"axis size {full}", 0)
        if size >= full:
            raise AttributeValueError(f"sub-axis {_axis_text(mesh, index, sub)} is not smaller than its axis "
                                      f"({full})", 0)
    for a, b in itertools.combinations(axes, 2):
        if not _coexist_without_overlap(a, b):
            raise AttributeValueError(f"mesh axes {_axis_text(mesh, *a)} and {_axis_text(mesh, *b)} overlap or "
                                      "cannot coexist", 0)
    for a, b in zip(axes, axes[1:]):
        if a[0] == b[0] and a[1] and b[1] and a[1][0] * a[1][1] == b[1][0]:
            raise AttributeValueError(f"adjacent mesh axes {_axis_text(mesh, *a)}, {_axis_text(mesh, *b)} merge "
                                      "into one", 0)


def _coexist_without_overlap(a, b) -> bool:
    """AxisRef::CanCoexistWithoutOverlap."""
    if a[0] != b[0]:
        return True
    if a[1] is None or b[1] is None:
        return False
    (pa, sa), (pb, sb) = a[1], b[1]
    na, nb = pa * sa, pb * sb
    if na > pb and nb > pa:
        return False
    return max(pa, pb) % min(na, nb) == 0


def _axis_text(mesh: _Mesh, index: int, sub) -> str:
    name = repr(mesh.names[index]) if index < len(mesh.names) else str(index)
    return name + (f":({sub[0]}){sub[1]}" if sub else "")


def _mesh_device_array(mesh: _Mesh) -> list[int] | None:
    """The device at each mesh position, row-major; None where XLA's is undefined."""
    kind = mesh.devices[0]
    if kind == "maximal":
        return [mesh.devices[1]]
    if kind == "empty":
        return []
    if not _listable(mesh.sizes):
        return None
    if kind == "list":
        return list(mesh.devices[1])
    if len(mesh.devices) == 1:
        return list(range(_product(mesh.sizes)))
    reshape, perm = mesh.devices[1], mesh.devices[2]
    if (not _listable(reshape) or _product(reshape) != _product(mesh.sizes)
            or not _is_permutation(perm, len(reshape))):
        return None
    return _iota(reshape, perm)


def _mesh_groups(mesh: _Mesh, axes) -> tuple[tuple[int, ...], ...] | None:
    """XLA's MeshAxesReplicaGroupList::flattened_replica_groups: each mesh axis is split
    into the parts its axis refs name (a sub-axis `(pre)size` is the part of `size` below
    `pre` more major ones); a group is the positions that agree on every part not named,
    ordered by the named parts in the order listed (the first most major); groups come in
    row-major order of the parts not named."""
    ids = _mesh_device_array(mesh)
    if ids is None:
        return None
    if not axes:  # groups of one device, in the mesh's order (the newest XLA reads these)
        return tuple((d,) for d in ids)
    sizes = mesh.sizes
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    # Each named part: (mesh axis, how many positions of that axis one step of it moves, size).
    named = []
    for index, sub in axes:
        full = sizes[index]
        if sub is None:
            named.append((index, 1, full))
        else:
            pre, size = sub
            named.append((index, full // (pre * size), size))
    by_key: dict[tuple, list[tuple[tuple[int, ...], int]]] = {}
    for pos, coords in enumerate(itertools.product(*(range(n) for n in sizes))):
        own = tuple((coords[i] // step) % size for i, step, size in named)
        rest = list(coords)
        for (i, step, size), c in zip(named, own):
            rest[i] -= c * step
        by_key.setdefault(tuple(rest), []).append((own, ids[pos]))
    return tuple(tuple(d for _, d in sorted(members)) for members in by_key.values())
