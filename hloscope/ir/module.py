"""The IR: Module ▸ Computation ▸ Instruction, plain objects in text order.

Names are stored without their `%` sigil, as XLA's C++ parser names them. In a scheduled
module (`is_scheduled=true`) each computation's instruction order is its schedule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Protocol

from ..executor import Executor
from . import graph, opcodes
from .attributes import (
    COMPUTATION_ATTRIBUTES,
    Attributes,
    decode_key_values,
    decode_names,
    unquote,
)
from .shape import Shape

if TYPE_CHECKING:
    import networkx


class BodySource(Protocol):
    """Where an unread computation body comes from (the text layer's lazy bodies).

    The IR knows only this: a body can be read into instructions, may be peeked at without
    linking, can say cheaply that a literal certainly does not occur in it, and answers for
    the check of the module's unread bodies (what a full parse would say of them)."""

    def read(self, computation: "Computation", in_text_order: bool = False,
             copies: dict | None = None) -> tuple[list["Instruction"] | None, "Instruction | None", "Computation | None"]:
        """The body's instructions (linked, in text order), its root, and the computation it
        repeats (`Computation.copy_of`), if any. `in_text_order`: the caller reads every
        unread body of the module, in text order, this one the first left
        (`Module.read_all`). `copies`: a dict the caller keeps for one such pass, in which
        the source keeps what lets a body written as one read before be known as its copy:
        then (None, None, that computation), and the next read makes the copy."""

    def peek(self) -> Any:
        """Instructions found one at a time, unlinked, or None when only a whole read is exact."""

    def mentions(self, literals: tuple[str, ...]) -> bool:
        """False only when none of `literals` occurs in the body's text, certainly."""

    def check_elsewhere(self, module: "Module", executor: Executor | None) -> None:
        """Let the check of the module's unread bodies (what a full parse would say of them)
        run through `executor`, reads going on meanwhile; None: checked at the first read."""

    def settle(self, module: "Module") -> None:
        """Raise what a full parse would report of the module's unread bodies, if anything
        (waiting for a check under way elsewhere)."""


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

    def __init__(self, name: str, opcode: str, shape: Shape, operands: list, attributes: Attributes, line: int = 0):
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
        self._called: tuple[str, ...] | None = None

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
        # Looked up only where the text may hold one of the keys (one search for all), and
        # what is cut to find them is not kept: the names are, here, once per instruction.
        names: tuple[str, ...] = ()
        if attrs.may_hold(COMPUTATION_ATTRIBUTES):
            for key in COMPUTATION_ATTRIBUTES:
                text = attrs.uncached(key)  # a key the text does not hold: a substring test
                if text is not None:
                    names += decode_names(text)
        self._called = names
        return names

    def know_called_computation_names(self, names: tuple[str, ...]) -> None:
        """Take `called_computation_names` as found elsewhere (by a process reading the same
        text), unless already found here."""
        if self._called is None:
            self._called = names

    @property
    def called_computations(self) -> list["Computation"]:
        """The computations this instruction calls (to_apply, calls, body, condition, branches)."""
        module = self.computation.module if self.computation is not None else None
        if module is None:
            return []
        out = []
        for name in self.called_computation_names:
            comp = module.callee(name)
            if comp is not None:
                out.append(comp)
        return out

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
                 "signature", "text_name", "_body", "_opcodes", "copy_of")

    def __init__(self, name: str, instructions: list[Instruction] | None, is_entry: bool, root: Instruction | None,
                 attributes: Attributes, line: int = 0, signature: Any = None, body: Any = None):
        self.name = name
        self._instructions = instructions
        self._body = body
        """While the instructions are unread: the body's text, read by `body.read(self)`."""
        self.is_entry = is_entry
        self._root = root
        self.module: Module | None = None
        self.attributes = attributes
        self.line = line
        self.signature = signature
        """The header's `(params) -> result`: text as printed, or (params, result) when
        written otherwise; the parameter instructions are what define parameters."""
        self._by_name: dict[str, Instruction] | None = None
        self._opcodes: frozenset[str] | None = None
        self.text_name = name
        """The name other instructions use for it in the text (XLA may rename repeats)."""
        self.copy_of: Computation | None = None
        """The computation whose body this one's repeats, up to the names of its instructions
        and of the computations they call (each name written with its `%`), when a read found
        so (`Module.read_all`): the two hold the same instructions in the same order,
        attributes and all but for the callees' names, which are each one's own
        (hloscope.text.copies). A copy's own instructions are made from its original's when
        first asked for; until then, what it holds is asked of the original (`may_contain`)."""

    @property
    def instructions(self) -> list[Instruction]:
        """Instructions in text order (the schedule, when the module is scheduled); an operand
        written `t#0` (the newest XLA's dumps) is the get-tuple-element its parser adds before
        the first user, as hloscope's does."""
        if self._instructions is None:
            self._read()
        return self._instructions  # type: ignore[return-value]

    @property
    def root(self) -> Instruction:
        if self._instructions is None:
            self._read()
        return self._root  # type: ignore[return-value]

    @property
    def body_source(self) -> BodySource | None:
        """Where the unread body comes from (None once read, unless `read_keeping_outline`)."""
        return self._body

    def forget_body_source(self) -> None:
        """Drop the kept body source of a read computation (its text no longer describes it)."""
        if self._instructions is not None:
            self._body = None

    @property
    def is_read(self) -> bool:
        """Whether the instructions have been read (a lazily loaded body is read on first use)."""
        return self._instructions is not None

    def _read(self, in_text_order: bool = False, copies: dict | None = None) -> None:
        instructions, root, self.copy_of = self._body.read(self, in_text_order, copies)
        if instructions is None:
            return  # a copy of `copy_of`, made when first asked for
        for inst in instructions:
            inst.computation = self
        self._instructions, self._root, self._body = instructions, root, None

    def read_keeping_outline(self) -> None:
        """Read the body now, and keep where it lies in the text: the module's outline can
        still be cached, and `may_mention` still searches the text. Raises HloSyntaxError as
        the read on first use would (the body then stays unread)."""
        if self._instructions is None:
            body = self._body
            self._read()
            self._body = body

    def peek(self):
        """For an unread body: its instructions found and cut one at a time, unlinked
        (operands are names), without reading the rest (`parser._Peek`); None when read or
        when only a whole read is exact."""
        return self._body.peek() if self._instructions is None else None

    def may_mention(self, literals: tuple[str, ...]) -> bool:
        """False only when the body's text certainly holds none of `literals`: lets an
        analysis skip bodies it need not read. Without the text (a read computation that
        did not keep it), True: the caller looks at its instructions."""
        body = self._body
        return True if body is None else body.mentions(literals)

    def may_contain(self, opcodes: tuple[str, ...]) -> bool:
        """False only when the unread body certainly holds no instruction with one of `opcodes`
        (spelled as the text writes them: `reduce-scatter-start`, not `async-start`). An
        instruction line writes blanks between its shape and its opcode, so the body's text
        then holds the opcode after a space or a tab (`may_mention`); True when unsure. A read
        body answers exactly, from the set of its opcodes."""
        if self._instructions is None and self.copy_of is not None:
            return self.copy_of.may_contain(opcodes)  # a copy holds its original's opcodes
        if self._instructions is not None:
            present = self._opcodes
            if present is None:
                present = self._opcodes = frozenset([i.opcode for i in self._instructions])
            return not present.isdisjoint(opcodes)
        literals = tuple(blank + op for op in opcodes for blank in (" ", "\t"))
        if "get-tuple-element" in opcodes:
            literals += ("#",)  # an operand `t#0` is one, not spelled (the newest XLA's dumps)
        return self.may_mention(literals)

    def __repr__(self) -> str:
        return f"<Computation {self.name} ({len(self.instructions)} instructions)>"

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __bool__(self) -> bool:
        # Always true, without reading an unread body for `__len__` (`a.copy_of or a`).
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
                 "source_path", "cache_key", "_checking", "_checked_up_to")

    def __init__(self, name: str, attributes: Attributes, computations: list[Computation], entry: Computation,
                 tables: dict[str, dict[int, str]]):
        self.name = name
        self.attributes = attributes
        self.computations = computations
        self.entry = entry
        self.tables = tables
        self.source_path: str | None = None
        self.cache_key: str | None = None
        """Names the module's text and place in it, when it was loaded from a file (hloscope.cache)."""
        self._by_name = {c.name: c for c in computations}
        self._by_text_name = {c.text_name: c for c in computations}
        self._checking: BodySource | None = None
        self._checked_up_to = 0
        """How many computations, in order, are known to need no check (`_unread_body`)."""
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

    def check_elsewhere(self, executor: Executor | None) -> None:
        """While an analysis runs, let the check of the unread bodies (a lazily loaded
        module's; see text.parser) run through `executor`: reads go on meanwhile, and the
        analysis calls `settle()` before it answers. None: back to checking at the first read."""
        body = self._unread_body() or self._checking
        if body is not None:
            body.check_elsewhere(self, executor)
        self._checking = body if executor is not None else None

    def settle(self) -> None:
        """Raise what a full parse would report of the unread bodies, if anything (a check
        started elsewhere is waited for even when every body has been read since)."""
        body = self._unread_body() or self._checking
        if body is not None:
            body.settle(self)

    def _unread_body(self) -> BodySource | None:
        """An unread body that needs the check (a known copy reads as its original did)."""
        # Asked before and after every analysis: a computation read, or known as a copy, stays
        # so, and the search goes on from the first one that was not.
        computations = self.computations
        for i in range(self._checked_up_to, len(computations)):
            comp = computations[i]
            if not comp.is_read and comp.body_source is not None and comp.copy_of is None:
                self._checked_up_to = i
                return comp.body_source
        self._checked_up_to = len(computations)
        return None

    def read_all(self) -> None:
        """Read every unread body now, in text order: what an analysis that reads them all
        calls first. A lazily loaded module then reads each body once; read one by one, the
        first read would check every other body first (text.parser's verdict), and the
        analysis would read them again. A body that repeats one read before, up to its
        instructions' names, is known as a copy of it (`Computation.copy_of`), and made from
        it only when its instructions are asked for: most analyses ask its original."""
        copies: dict = {}
        for comp in self.computations:
            if not comp.is_read and comp.copy_of is None:
                comp._read(in_text_order=True, copies=copies)

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
