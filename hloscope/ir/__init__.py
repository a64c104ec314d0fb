"""The IR: shapes, the opcode table, attributes, and Module ▸ Computation ▸ Instruction.

The bottom layer: plain objects that know nothing of how they were parsed, cached or
analysed (a loader may subclass Computation to read its body later: hloscope.speed.lazy).
"""

from .module import Computation, Instruction, Module
from .shape import Shape

__all__ = ["Computation", "Instruction", "Module", "Shape"]
