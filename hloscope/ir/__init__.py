"""The IR: shapes, the opcode table, attributes, and Module ▸ Computation ▸ Instruction.

The bottom layer: plain objects that know nothing of how they were parsed, cached or
analysed. A computation's body may be read lazily through the `BodySource` protocol
(hloscope.ir.module), which the text layer implements.
"""

from .module import Computation, Instruction, Module
from .shape import Shape

__all__ = ["Computation", "Instruction", "Module", "Shape"]
