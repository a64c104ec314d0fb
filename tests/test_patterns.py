"""Long expressions made from the program an earlier process kept (hloscope.patterns): the
same patterns `re.compile` makes, and none of them compiled again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import FIXTURES

_FIXTURE = FIXTURES / "cpu_fsdp" / "module.hlo.txt"

# A process that parses a fixture (the lexer's, the cuts' and the printed computations'
# expressions), reads every body, and reports each long expression it made: whether the
# pattern equals `re.compile`'s, and how many long expressions `re` compiled meanwhile.
_PARSE = r"""
import json, re, sys
import re._compiler as compiler
compiles = []
original = compiler.compile
def counted(p, flags=0):
    if isinstance(p, str) and len(p) >= 1000:
        compiles.append(p)
    return original(p, flags)
compiler.compile = counted
import hloscope
from hloscope import patterns
module = hloscope.parse(open(sys.argv[1]).read())
for comp in module.computations:
    comp.instructions
during = len(compiles)
compiler.compile = original
long = {key: made for key, made in patterns._made.items() if len(key[0]) >= 1000}
print(json.dumps({"long": len(long), "equal": all(made == re.compile(*key) for key, made in long.items()),
                  "compiled": during}))
"""


def _parse(cache: str | None, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HLOSCOPE_")}
    environ.update(env, HLOSCOPE_JOBS="1")
    if cache is not None:
        environ["HLOSCOPE_CACHE_DIR"] = cache
    out = subprocess.run([sys.executable, "-c", _PARSE, str(_FIXTURE)], env=environ, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _programs(cache) -> list[str]:
    return [name for name in os.listdir(cache) if name.startswith("regex-")]


def test_a_second_process_compiles_no_long_expression_and_makes_the_same_patterns(tmp_path):
    first = _parse(str(tmp_path))
    assert first["long"] >= 5  # the lexer's long terminals, the cuts, the printed computations
    assert first["equal"]
    assert first["compiled"] >= first["long"]
    assert len(_programs(tmp_path)) == 1
    second = _parse(str(tmp_path))
    assert second == {"long": first["long"], "equal": True, "compiled": 0}


def test_a_damaged_file_or_no_cache_gives_the_same_patterns(tmp_path):
    _parse(str(tmp_path))
    (name,) = _programs(tmp_path)
    path = tmp_path / name
    for damage in (path.read_bytes()[: path.stat().st_size // 2], b"", b"not a program"):
        path.write_bytes(damage)
        again = _parse(str(tmp_path))
        assert again["equal"] and again["long"] >= 5 and again["compiled"] >= again["long"]
    # The file is written again whole: the next process compiles nothing.
    assert _parse(str(tmp_path))["compiled"] == 0
    off = _parse(None, HLOSCOPE_CACHE="0")
    assert off["equal"] and off["compiled"] >= off["long"] >= 5
