"""The one encoder behind `to_dict()`: fields in order, the declared differences, and every
result of the package written by it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import pytest

from hloscope.encode import Encoded, as_json, by_key, encode, extra

from .conftest import ROOT


@dataclass(frozen=True, slots=True)
class Leaf(Encoded):
    n: int
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tree(Encoded):
    name: str = field(metadata=as_json(key="title"))
    leaves: tuple[Leaf, ...] = field(metadata=as_json(after="total"))
    spaces: dict[int, int] = field(metadata=as_json(value=by_key))
    hidden: str = field(default="", metadata=as_json(omit=True))
    doubled: int = field(default=1, metadata=as_json(get=lambda t: 2 * t.doubled))
    maybe: int | None = field(default=None, metadata=as_json(omit_none=True))
    json_extra = (extra("total", after="title"), extra("first", "first_leaf", after="total"),
                  extra("constant", lambda _: "c"))

    @property
    def total(self) -> int:
        return sum(leaf.n for leaf in self.leaves)

    @property
    def first_leaf(self) -> Leaf:
        return self.leaves[0]


def test_fields_in_order_each_value_encoded():
    assert Leaf(3, ("a", "b")).to_dict() == {"n": 3, "names": ["a", "b"]}
    assert list(Leaf(3).to_dict()) == ["n", "names"]


def test_declared_differences():
    tree = Tree("t", (Leaf(1), Leaf(2, ("x",))), {10: 1, 2: 5}, hidden="h", doubled=4)
    d = tree.to_dict()
    # What follows one key follows it in the order declared, fields first.
    assert list(d) == ["title", "total", "leaves", "first", "spaces", "doubled", "constant"]
    assert d == {"title": "t", "total": 3, "first": {"n": 1, "names": []},
                 "leaves": [{"n": 1, "names": []}, {"n": 2, "names": ["x"]}],
                 "spaces": {"2": 5, "10": 1}, "doubled": 8, "constant": "c"}
    assert list(Tree("t", (Leaf(1),), {}, maybe=0).to_dict())[-2:] == ["maybe", "constant"]


def test_a_caller_adds_values_after_a_key():
    tree = Tree("t", (Leaf(1),), {})
    assert list(encode(tree, {"by": "x", "groups": []}, after="total")) == [
        "title", "total", "by", "groups", "leaves", "first", "spaces", "doubled", "constant"]
    assert list(encode(tree, {"more": 1}))[-1] == "more"
    with pytest.raises(KeyError):
        encode(tree, {"more": 1}, after="hidden")


def test_bad_declarations_are_refused():
    @dataclass(frozen=True)
    class Twice(Encoded):
        a: int = field(metadata=as_json(key="b"))
        b: int = 0

    @dataclass(frozen=True)
    class Nowhere(Encoded):
        a: int = field(metadata=as_json(after="z"))

    @dataclass(frozen=True)
    class Circle(Encoded):
        a: int = field(metadata=as_json(after="b"))
        b: int = field(metadata=as_json(after="a"))

    for bad in (Twice(1), Nowhere(1), Circle(1, 2)):
        with pytest.raises(TypeError):
            bad.to_dict()
    with pytest.raises(TypeError):
        Leaf(object()).to_dict()  # type: ignore[arg-type]


def test_every_to_dict_of_a_result_is_the_encoders():
    """A `to_dict` that writes its own dict drifts from its fields; the IR's Module,
    Computation and Instruction are no dataclasses, and write theirs."""
    own = []
    for path in sorted((ROOT / "hloscope").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in ast.walk(tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            dataclass_ = any("dataclass" in ast.unparse(d) for d in cls.decorator_list)
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "to_dict":
                    calls = {ast.unparse(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
                    if dataclass_ and "encode" not in calls:
                        own.append(f"{path.relative_to(ROOT)}:{cls.name}")
    assert own == []
