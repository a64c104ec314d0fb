"""XLA's own answers, for tests to compare hloscope with (imports jax lazily)."""

from __future__ import annotations

import json
import os
import re

# XLA opcode enum names whose text spelling is not the plain kebab-case of the enum.
_SPELLING_EXCEPTIONS = {
    "kExpm1": "exponential-minus-one",
    "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier",
    "kTopK": "topk",
    "kPopulationCount": "popcnt",
    "kSin": "sine",
    "kCos": "cosine",
    "kExp": "exponential",
    "kClz": "count-leading-zeros",
}


def opcode_spelling(enum_value) -> str:
    """`HloOpcode.kAllGatherStart` → `all-gather-start`."""
    name = str(enum_value).rsplit(".", 1)[-1]
    if name in _SPELLING_EXCEPTIONS:
        return _SPELLING_EXCEPTIONS[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def xla_parse(text: str):
    """XLA's C++ parser: {computation: [(name, opcode, [operand names])]} in XLA's order.

    Raises the parser's exception for text XLA rejects."""
    from jax._src.lib import xla_client as xc

    module = xc.hlo.hlo_module_from_text(text)
    out = {}
    for comp in module.computations():
        out[comp.name] = [
            (inst.name, opcode_spelling(inst.opcode), [o.name for o in inst.operands()])
            for inst in comp.instructions()
        ]
    return out


_READINGS_WORKER = r"""
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.nice(10)  # the tests meanwhile go first
from jax._src.lib import xla_client as xc
with open(sys.argv[1]) as f:
    texts = json.load(f)
with open(sys.argv[2], "w") as out:
    for text in texts:
        try:
            module = xc.hlo.hlo_module_from_text(text)
            answer = [[comp.name, [[inst.name, str(inst.opcode), [o.name for o in inst.operands()]]
                                   for inst in comp.instructions()]] for comp in module.computations()]
        except Exception as e:
            answer = {"error": str(e) or type(e).__name__}
        out.write(json.dumps(answer) + "\n")
"""


class XlaReadings:
    """`xla_parse` of many texts by a process of its own, started at once: XLA's parse runs
    on another CPU while other tests run (a few corpus modules take XLA 16 s each, for
    literals of 800 MB). `python`: the interpreter whose jaxlib to use (another XLA
    release), this one's by default. `reading(k)` waits for the process and gives
    `xla_parse(texts[k])`, raising ValueError with XLA's message for a text XLA refuses."""

    def __init__(self, texts: list[str], python: str | None = None):
        import subprocess
        import sys
        import tempfile

        self._texts = texts
        self._here = python is None or python == sys.executable
        self._directory = tempfile.TemporaryDirectory(prefix="xla-readings-")
        asked, self._answers = (os.path.join(self._directory.name, n) for n in ("asked.json", "answers.jsonl"))
        with open(asked, "w") as f:
            json.dump(texts, f)
        open(self._answers, "w").close()  # no answer yet, should the worker fail at its start
        self._proc = subprocess.Popen([python or sys.executable, "-c", _READINGS_WORKER, asked, self._answers],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        self._read: list | None = None

    def reading(self, k: int) -> dict:
        if self._read is None:
            self._proc.wait()
            with open(self._answers) as f:
                self._read = [json.loads(line) for line in f if line.endswith("\n")]
        if k >= len(self._read):  # the worker died before it answered
            if not self._here:
                raise RuntimeError(f"XLA's worker stopped (exit {self._proc.returncode}) before text {k}")
            return xla_parse(self._texts[k])
        answer = self._read[k]
        if isinstance(answer, dict):
            raise ValueError(answer["error"])
        return {name: [(n, opcode_spelling(op), operands) for n, op, operands in instructions]
                for name, instructions in answer}

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._directory.cleanup()


def xla_parse_with(python: str, text: str):
    """`xla_parse(text)` by the jaxlib of another interpreter (`python`), in a process of its
    own; raises ValueError with XLA's message for text that XLA refuses."""
    readings = XlaReadings([text], python)
    try:
        return readings.reading(0)
    finally:
        readings.stop()


# ─── collectives, as XLA's own parser sees them ─────────────────────────────────────────

# Opcode spellings XLA's parser gives a counted collective: the plain ops and the native
# async starts. Sugar (`reduce-scatter-start`) becomes an async-start whose synthesized
# `async_wrapped` computation holds the plain op, which is what gets counted.
XLA_COLLECTIVE_SPELLINGS = {
    "all-gather": "all-gather",
    "all-gather-start": "all-gather",
    "all-reduce": "all-reduce",
    "all-reduce-start": "all-reduce",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "ragged-all-to-all": "ragged-all-to-all",
    "collective-permute": "collective-permute",
    "collective-permute-start": "collective-permute",
    "collective-broadcast": "collective-broadcast",
    "send": "send",
    "recv": "recv",
}

_XLA_ELEMENT_BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
    "f8e5m2": 1, "f8e4m3fn": 1, "token": 0,
}
_XLA_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")


def _shape_text_bytes(text: str) -> int:
    """Array bytes of every leaf of a printed shape (layouts ignored; dense, unpacked)."""
    total = 0
    for etype, dims in _XLA_ARRAY.findall(text):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * _XLA_ELEMENT_BYTES[etype]
    return total


def _xla_result_shape_text(inst) -> str:
    # `%name = SHAPE opcode(...)`: the shape sits between ` = ` and ` opcode(`.
    text = inst.to_string()
    head = text.split(" = ", 1)[1]
    spelling = opcode_spelling(inst.opcode)
    return head[: head.index(f" {spelling}(")]


def xla_collectives(text: str) -> list[tuple[str, str, str, int]]:
    """Every collective (and send/recv) XLA's parser finds, in every computation it reports:
    `(kind, computation, instruction, result bytes)`; a native start's bytes are its done's."""
    from jax._src.lib import xla_client as xc

    module = xc.hlo.hlo_module_from_text(text)
    out = []
    for comp in module.computations():
        for inst in comp.instructions():
            spelling = opcode_spelling(inst.opcode)
            kind = XLA_COLLECTIVE_SPELLINGS.get(spelling)
            if kind is None:
                continue
            result = inst
            if spelling.endswith("-start"):
                dones = [u for u in inst.users() if opcode_spelling(u.opcode).endswith("-done")]
                result = dones[0] if dones else inst
            out.append((kind, comp.name, inst.name, _shape_text_bytes(_xla_result_shape_text(result))))
    return out


# XLA's dump files (`--xla_dump_to`), for the memory and liveness tests.


def read_dump(path) -> str:
    """A dump file's text, gzipped or not."""
    import gzip

    path = str(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def parse_live_range_dump(text: str) -> tuple[list[str], dict[tuple[str, str], tuple[int, int]]]:
    """`*-live-range.txt` → (flattened schedule, {(instruction, "{i,j}"): (start, end)})."""
    steps: list[str] = []
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s == "InstructionSequence:":
            section = "steps"
            continue
        if s == "BufferLiveRange:":
            section = "ranges"
            continue
        if s.startswith("Live ranges at") or s.startswith("Stack trace"):
            section = None
            continue
        if section == "steps":
            m = re.match(r"(\d+):(\S+)$", s)
            if m:
                steps.append(m.group(2))
        elif section == "ranges":
            m = re.match(r"(\S+?)(\{[^}]*\}):(\d+)-(\d+)$", s)
            if m:
                ranges[(m.group(1), m.group(2))] = (int(m.group(3)), int(m.group(4)))
    return steps, ranges


def parse_buffer_assignment_dump(text: str) -> list[dict]:
    """`*-buffer-assignment.txt` → allocations: {index, size, kinds, values: [{name, index,
    size, offset, shape}]}."""
    allocations: list[dict] = []
    current = None
    for line in text.splitlines():
        m = re.match(r"allocation (\d+): size (\d+), (.*):$", line.rstrip())
        if m:
            current = {"index": int(m.group(1)), "size": int(m.group(2)), "kinds": m.group(3), "values": []}
            allocations.append(current)
            continue
        # A while's phi values print as `<ID NAME{i} (phi) @POS>`.
        m = re.match(r" value: <(\d+) (\S+?)(\{[^}]*\})?( \(phi\))? @(\d+)> \(size=(\d+),offset=(\d+)\): (.*)$",
                     line.rstrip())
        if m and current is not None:
            current["values"].append({"name": m.group(2), "index": m.group(3) or "{}", "size": int(m.group(6)),
                                      "offset": int(m.group(7)), "shape": m.group(8), "id": int(m.group(1)),
                                      "phi": bool(m.group(4))})
        elif line.startswith("Total bytes") or line.startswith("Used values"):
            current = None
    return allocations


# ─── XLA's parser and collectives in a process of their own ────────────────────────────
#
# XLA refuses some malformed text with a failed CHECK, which aborts the process it runs
# in (jaxlib 0.10.2: an unknown mesh axis, device_ids that are no permutation, a sub-axis
# that does not divide its axis). Texts are parsed in a child of a worker process that has
# imported jax, forked again after each abort; an abort counts as a refusal.

_PARSE_WORKER = r"""
import json, os, select, signal, sys, tempfile
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from jax._src.lib import xla_client as xc

def parse_each(requests, answers):
    for line in requests:
        try:
            xc.hlo.hlo_module_from_text(json.loads(line))
            answer = ""
        except Exception as e:  # XLA's error, whatever its type
            answer = str(e) or type(e).__name__
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    os._exit(0)

def fork():
    # A child forked from this process (jax imported once) parses until an abort kills it;
    # what it writes to stderr goes to a file of its own, read after an abort.
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    said = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        os.close(down_w)
        os.close(up_r)
        os.dup2(said.fileno(), 2)
        parse_each(os.fdopen(down_r), os.fdopen(up_w, "w"))
    os.close(down_r)
    os.close(up_w)
    return pid, os.fdopen(down_w, "w"), os.fdopen(up_r), said

def failed_check(child):
    # Whether the child that died printed the stack trace absl prints for a failed CHECK or
    # a LOG(FATAL): XLA stopped on the text, where a fork gone wrong would not say so.
    said = child[3]
    said.seek(0)
    return b"*** Check failure stack trace: ***" in said.read()

def ask(child, line):
    # The child's answer; "" when it aborted (a failed CHECK), None when it did not answer
    # in time (a forked child has been seen to spin: it is killed and the text asked again).
    pid, requests, answers, _ = child
    requests.write(line)
    requests.flush()
    if not select.select([answers], [], [], 30)[0]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    answer = answers.readline()
    if not answer:
        os.waitpid(pid, 0)
    return answer

child = None
for line in sys.stdin:
    aborts = 0
    for attempt in range(3):
        if child is None:
            child = fork()
        answer = ask(child, line)
        if answer:
            break
        died, child = child, None
        if answer == "" and failed_check(died):
            answer = json.dumps("aborted") + "\n"  # what the caller says of a worker that aborts
            break
        if answer == "":
            aborts += 1
            if aborts == 2:
                break
    if not answer:
        # Forked children died twice without XLA's fatal stack trace (a crash: SIGSEGV,
        # SIGFPE), or did not answer: the text's own, or a fork gone wrong under load (fork
        # copies only the forking thread; a lock another of jax's threads held stays held),
        # which says nothing of the text. Parsed here, in this process, which has all its
        # threads: a crash ends this worker, and the caller then counts the text refused
        # ("aborted") and starts another.
        try:
            xc.hlo.hlo_module_from_text(json.loads(line))
            answer = json.dumps("") + "\n"
        except Exception as e:
            answer = json.dumps(str(e) or type(e).__name__) + "\n"
    sys.stdout.write(answer)
    sys.stdout.flush()
"""


class XlaParserProcess:
    """XLA's C++ parser (`hlo_module_from_text`) in a worker process: `errors(texts)` gives,
    for each text, None where XLA reads it, else its message ("aborted" for a failed CHECK).
    `python`: the interpreter whose jaxlib to use (another XLA release), this one's by default."""

    def __init__(self, python: str | None = None):
        import sys

        self.python = python or sys.executable
        self._proc = None

    def _start(self):
        import subprocess

        self._proc = subprocess.Popen([self.python, "-c", _PARSE_WORKER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def error(self, text: str) -> str | None:
        import json

        if self._proc is None or self._proc.poll() is not None:
            self._start()
        self._proc.stdin.write(json.dumps(text) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:  # the worker aborted (a failed CHECK)
            self._proc.wait()
            self._proc = None
            return "aborted"
        answer = json.loads(line)
        return answer or None

    def errors(self, texts, workers: int | None = None) -> list[str | None]:
        """`error` of each text, in order. The texts are shared among `workers` worker
        processes (by default one per CPU, at most 4): most of the time goes to restarting a
        worker after XLA aborts, which one process does one at a time."""
        import os
        from concurrent.futures import ThreadPoolExecutor

        texts = list(texts)
        if workers is None:
            workers = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
        if workers <= 1 or len(texts) < 2 * workers:
            return [self.error(t) for t in texts]
        others = [XlaParserProcess(self.python) for _ in range(workers - 1)]
        shares = [texts[k::workers] for k in range(workers)]
        try:
            with ThreadPoolExecutor(workers) as pool:
                answers = list(pool.map(lambda job: [job[0].error(t) for t in job[1]], zip([self, *others], shares)))
        finally:
            for other in others:
                other.close()
        out: list[str | None] = [None] * len(texts)
        for k, share in enumerate(answers):
            out[k::workers] = share
        return out

    def close(self):
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait()
            self._proc = None


_GROUPS_WORKER = r"""
import json, os, re, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=16"
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import jax
import jax.extend
from jax._src.interpreters import mlir
from jax._src.lib import xla_client as xc
from jax._src.lib.mlir import ir

ADD = "add {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = s32[] add(a, b)\n}\n"

def listed(groups):
    # XLA's own expansion: the HLO-to-StableHLO translation lists the groups it reads.
    text = ("HloModule m, replica_count=16\n" + ADD + "ENTRY e {\n  p = s32[4] parameter(0)\n"
            "  ROOT r = s32[4] all-reduce(p), replica_groups=" + groups + ", to_apply=add\n}\n")
    module = xc.hlo.hlo_module_from_text(text)
    with mlir.make_ir_context():
        stablehlo = str(ir.Module.parse(xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())))
    m = re.search(r"replica_groups = dense<(.*?)> : tensor<(\d+)x(\d+)xi64>", stablehlo)
    value, rows, cols = json.loads(m.group(1) or "[]"), int(m.group(2)), int(m.group(3))
    if not isinstance(value, list):  # a splat: every id the same
        value = [[value] * cols for _ in range(rows)]
    return value

def run(groups, n, size):
    # XLA's runtime: each of n replicas gathers the replica ids of its group, in group order
    # (XLA's verifier refuses the program unless `size` is the size of the groups).
    text = ("HloModule m, replica_count=" + str(n) + "\nENTRY e {\n  i = u32[] replica-id()\n"
            "  r = u32[1] reshape(i)\n  ROOT g = u32[" + str(size) + "] all-gather(r), replica_groups="
            + groups + ", dimensions={0}\n}\n")
    module = xc.hlo.hlo_module_from_text(text)
    backend = jax.extend.backend.get_backend("cpu")
    options = xc.CompileOptions()
    build = options.executable_build_options
    build.num_replicas, build.num_partitions = n, 1
    build.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(n, 1))
    executable = backend.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto()),
                                          xc._xla.DeviceList(tuple(backend.devices()[:n])), options)
    out = executable.execute_sharded([]).disassemble_into_single_device_arrays()[0]
    return [np.asarray(a).tolist() for a in out]

def devices(tiling):
    return xc.hlo.HloSharding.from_string("{devices=" + tiling + "}").tile_assignment_devices()

for line in sys.stdin:
    request = json.loads(line)
    try:
        if request[0] == "listed":
            answer = listed(request[1])
        elif request[0] == "run":
            answer = run(request[1], request[2], request[3])
        else:
            answer = devices(request[1])
    except Exception as e:
        answer = {"error": str(e)[:300]}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


class XlaGroupsProcess:
    """XLA's answers on replica groups, in a worker process with 16 CPU devices:
    `listed(groups)` (XLA's expansion of an explicit or iota list, as its HLO-to-StableHLO
    translation lists it), `run(groups, n, size)` (what each of n replicas gathers from its
    group of `size` when the program runs: the group's members in their order; XLA refuses
    the program unless the groups are of that size), `devices(tiling)` (the
    devices of a tile assignment such as `[4,2]<=[2,4]T(1,0)`, as HloSharding expands it)."""

    def __init__(self):
        import subprocess
        import sys

        self._proc = subprocess.Popen([sys.executable, "-c", _GROUPS_WORKER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def _ask(self, *request):
        import json

        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = json.loads(self._proc.stdout.readline())
        if isinstance(answer, dict):
            raise RuntimeError(f"XLA could not answer {request}: {answer['error']}")
        return answer

    def listed(self, groups: str) -> list[list[int]]:
        return self._ask("listed", groups)

    def run(self, groups: str, n: int, size: int) -> list[list[int]]:
        return self._ask("run", groups, n, size)

    def devices(self, tiling: str) -> list[int]:
        return self._ask("devices", tiling)

    def close(self):
        self._proc.stdin.close()
        self._proc.wait()


def xla_temp_at_peak(directory, highest: bool = False) -> list[dict]:
    """From a compilation's dump files alone (`buffer-assignment.txt.gz`, `live-range.txt.gz`
    in `directory`): the arrays of XLA's temp allocation live at the step of the schedule
    where the most of its bytes are, each `{name, index, size, shape, ...}`. A target with
    several memory spaces has a temp allocation in each (TPU: HBM, and VMEM, which holds the
    whole of a step small enough): by default the HBM one (`preallocated-temp` alone), with
    `highest` the one whose arrays peak highest."""
    from pathlib import Path

    directory = Path(directory)
    allocations = [a for a in parse_buffer_assignment_dump(read_dump(directory / "buffer-assignment.txt.gz"))
                   if (a["kinds"].endswith("preallocated-temp") if highest
                       else a["kinds"].removeprefix("page 0, ") == "preallocated-temp")]
    _, ranges = parse_live_range_dump(read_dump(directory / "live-range.txt.gz"))
    best: list[dict] = []
    best_bytes = -1
    for allocation in allocations:
        arrays = [v for v in allocation["values"] if not v["shape"].startswith("(")]
        delta: dict[int, int] = {}
        for v in arrays:
            start, end = ranges[(v["name"], v["index"])]
            delta[start] = delta.get(start, 0) + v["size"]
            delta[end + 1] = delta.get(end + 1, 0) - v["size"]
        live = peak = at = 0
        for t in sorted(delta):
            live += delta[t]
            if live > peak:
                peak, at = live, t
        if peak > best_bytes:
            best_bytes = peak
            best = [v for v in arrays if ranges[(v["name"], v["index"])][0] <= at <= ranges[(v["name"], v["index"])][1]]
    return best
