"""The IR: Module ▸ Computation ▸ Instruction, plain objects in text order.

Names are stored without their `%` sigil, as XLA's C++ parser names them. In a scheduled
module (`is_scheduled=true`) each computation's instruction order is its schedule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from . import graph, opcodes
from .attributes import (
    COMPUTATION_ATTRIBUTES,
    Attributes,
    callees_in_tail,
    decode_key_values,
    decode_names,
    unquote,
)
from .shape import Shape

if TYPE_CHECKING:
    import networkx


class Instruction:
    """One HLO instruction.

    `operands` are Instructions of the same computation; `attributes` keeps every attribute
    as written (decoded on demand); `literal` is a constant's literal text; `parameter_number`
    is the N of `parameter(N)`.
    """

    __slots__ = (
        "name",
        "opcode",
        "shape",
        "operands",
        "attributes",
        "is_root",
        "computation",
        "line",
        "literal",
        "parameter_number",
        "users",
        "nested",
        "_called",
    )

    def __init__(self, name: str, opcode: str, shape: Shape, operands: list, attributes: Attributes, line: int = 0,
                 called: tuple[str, ...] | None = None):
        self.name = name
        self.opcode = opcode
        self.shape = shape
        self.operands: list[Instruction] = operands
        self.attributes = attributes
        self.is_root = False
        self.computation: Computation | None = None
        self.line = line
        self.literal: str | None = None
        self.parameter_number: int | None = None
        self.users: list[Instruction] = []
        self.nested = False
        self._called = called
        """`called_computation_names`, once found (or given by a maker that read the same
        attributes)."""

    def __repr__(self) -> str:
        return f"<Instruction {self.name} = {self.shape} {self.opcode}>"

    @property
    def info(self) -> opcodes.OpInfo:
        """The opcode table's facts about this instruction's opcode."""
        return opcodes.info(self.opcode)

    @property
    def metadata(self) -> dict[str, Any]:
        """`metadata={...}` as a dict (`op_name`, `op_type`, `source_file`, `source_line`, ...)."""
        return self.attributes.decoded("metadata") or {}

    @property
    def op_name(self) -> str | None:
        if not self.attributes.mentions("op_name"):
            return None  # most ops without one are answered without decoding their metadata
        return self.metadata.get("op_name")

    @property
    def source(self) -> str | None:
        """`file:line` of the code that produced this instruction, when the metadata says."""
        md = self.metadata
        file, line = md.get("source_file"), md.get("source_line")
        if file is None and "stack_frame_id" in md and self.computation is not None:
            module = self.computation.module
            if module is not None:
                return module.stack_frame_source(md["stack_frame_id"])
        if file is None:
            return None
        return f"{file}:{line}" if line is not None else file

    @property
    def called_computation_names(self) -> tuple[str, ...]:
        called = self._called
        if called is not None:
            return called
        attrs = self.attributes
        # Told from the uncut tail where that is exact (most callers: a fusion's `calls=`);
        # else looked up only where the text may hold one of the keys (one search for all),
        # and what is cut to find them is not kept: the names are, here, once per instruction.
        names = callees_in_tail(attrs.tail) if attrs.tail else None
        if names is None:
            names = ()
            for key in attrs.keys_written(COMPUTATION_ATTRIBUTES):
                text = attrs.uncached(key)
                if text is not None:
                    names += decode_names(text)
        self._called = names
        return names

    @property
    def called_computations(self) -> list["Computation"]:
        """The computations this instruction calls (to_apply, calls, body, condition, branches)."""
        computation = self.computation
        module = computation.module if computation is not None else None
        names = self._called
        if names is None:
            names = self.called_computation_names
        if module is None or not names:
            return []
        return [c for c in map(module.callee, names) if c is not None]

    @property
    def known_trip_count(self) -> int | None:
        """A while loop's trip count, when XLA recorded it in `backend_config`."""
        config = self.attributes.decoded("backend_config")
        if isinstance(config, dict):
            ktc = config.get("known_trip_count")
            if isinstance(ktc, dict) and "n" in ktc:
                try:
                    return int(ktc["n"])
                except (TypeError, ValueError):
                    return None
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "opcode": self.opcode,
            "shape": self.shape.text,
            "operands": [o.name for o in self.operands],
            "called_computations": list(self.called_computation_names),
            "op_name": self.op_name,
        }


class Computation:
    """A computation: its instructions in text order, its root and parameters."""

    __slots__ = ("name", "_instructions", "is_entry", "_root", "module", "attributes", "line", "_by_name",
                 "signature", "text_name")

    def __init__(self, name: str, instructions: list[Instruction] | None, is_entry: bool, root: Instruction | None,
                 attributes: Attributes, line: int = 0, signature: Any = None):
        self.name = name
        self._instructions = instructions
        self.is_entry = is_entry
        self._root = root
        self.module: Module | None = None
        self.attributes = attributes
        self.line = line
        self.signature = signature
        """The header's `(params) -> result`: text as printed, or (params, result) when
        written otherwise; the parameter instructions are what define parameters."""
        self._by_name: dict[str, Instruction] | None = None
        self.text_name = name
        """The name other instructions use for it in the text (XLA may rename repeats)."""

    @property
    def instructions(self) -> list[Instruction]:
        """Instructions in text order (the schedule, when the module is scheduled); an operand
        written `t#0` (the newest XLA's dumps) is the get-tuple-element its parser adds before
        the first user, as hloscope's does."""
        return self._instructions  # type: ignore[return-value]

    @property
    def root(self) -> Instruction:
        return self._root  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"<Computation {self.name} ({len(self.instructions)} instructions)>"

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __bool__(self) -> bool:
        # Always true (`a or b` picks a computation, never asks its length).
        return True

    def instruction(self, name: str) -> Instruction | None:
        if self._by_name is None:
            self._by_name = {i.name: i for i in self.instructions}
        return self._by_name.get(name.lstrip("%"))

    @property
    def parameters(self) -> list[Instruction]:
        """Parameter instructions, by parameter number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number or 0)

    @property
    def execution_thread(self) -> str:
        return self.attributes.decoded("execution_thread", "main")

    def graph(self) -> "networkx.MultiDiGraph":
        """Dataflow graph of this computation: instruction names, edges operand → user."""
        return graph.computation_graph(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "is_entry": self.is_entry,
            "instructions": [i.to_dict() for i in self.instructions],
        }


class Module:
    """One HloModule: header attributes, debug tables, computations in text order."""

    __slots__ = ("name", "attributes", "computations", "entry", "tables", "_by_name", "_by_text_name", "_frame_sources",
                 "source_path", "__weakref__")

    def __init__(self, name: str, attributes: Attributes, computations: list[Computation], entry: Computation,
                 tables: dict[str, dict[int, str]]):
        self.name = name
        self.attributes = attributes
        self.computations = computations
        self.entry = entry
        self.tables = tables
        self.source_path: str | None = None
        self._by_name = {c.name: c for c in computations}
        self._by_text_name = {c.text_name: c for c in computations}
        self._frame_sources: dict[int, str | None] = {}
        for c in computations:
            c.module = self

    def __repr__(self) -> str:
        return f"<Module {self.name} ({len(self.computations)} computations)>"

    def computation(self, name: str) -> Computation | None:
        """The computation of this name (as XLA names it, else as the text names it)."""
        name = name.lstrip("%")
        return self._by_name.get(name) or self._by_text_name.get(name)

    def callee(self, text_name: str) -> Computation | None:
        """The computation an attribute's value refers to (by its name in the text)."""
        return self._by_text_name.get(text_name.lstrip("%"))

    def instructions(self) -> Iterator[Instruction]:
        """Every instruction of every computation, in text order."""
        for comp in self.computations:
            yield from comp.instructions

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    @property
    def is_scheduled(self) -> bool:
        return self.attributes.get("is_scheduled", "false").strip() in ("true", "{true}")

    def stack_frame_source(self, frame_id: int) -> str | None:
        """`file:line` of a StackFrames row (the innermost frame), or None."""
        sources = self._frame_sources
        frame_id = int(frame_id)
        if frame_id not in sources:  # a few hundred rows, asked for by every instruction
            sources[frame_id] = self._frame_source(frame_id)
        return sources[frame_id]

    def _frame_source(self, frame_id: int) -> str | None:
        frame = self.tables.get("StackFrames", {}).get(frame_id)
        if frame is None:
            return None
        loc = self.tables.get("FileLocations", {}).get(decode_key_values(frame).get("file_location_id", -1))
        if loc is None:
            return None
        fields = decode_key_values(loc)
        file = self.tables.get("FileNames", {}).get(fields.get("file_name_id", -1))
        if file is None:
            return None
        return f"{unquote(file)}:{fields.get('line')}"

    def graph(self) -> "networkx.MultiDiGraph":
        """Dataflow graph of the whole module: nodes `computation/instruction`, operand and call edges."""
        return graph.module_graph(self)

    def call_graph(self) -> "networkx.MultiDiGraph":
        """Computations as nodes, an edge per calling instruction (attribute `instruction`)."""
        return graph.call_graph(self)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "computations": [c.to_dict() for c in self.computations]}
