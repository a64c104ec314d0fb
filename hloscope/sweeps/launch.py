"""Compiling one variant in a fresh process, bounded in time and host memory; and where the
variants run: local worker processes, or tasks of a Dask distributed scheduler.

`compile_variant(request)` starts `worker.py` (a script: a new interpreter, never a fork of a
process that holds JAX's threads) with the environment the target needs, and returns plain
data: the compiled text and XLA's figures, or the error. It is also what a Dask task runs on
a worker machine, so the text comes back to the caller, whose cache keeps it.

Memory: XLA reserves far more address space than it touches (so RLIMIT_AS would fail good
compiles); instead the worker's resident memory is read from /proc every quarter second and
the process is killed once it passes its limit (by default the host's available memory at
the start, shared among the parallel workers), its row saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed

from ..errors import HloscopeError

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
DEVICELESS_ENV = {"JAX_PLATFORMS": "cpu", "TPU_SKIP_MDS_QUERY": "1", "TPU_WORKER_HOSTNAMES": "localhost",
                  "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
"""The environment of every worker: no device is opened; TPU and H100 compile from topology
descriptions (../shared/DESIGN.md, "Accelerator HLO without an accelerator"). libtpu takes a
lock file per host unless told several processes may load it: the parallel workers do."""
POLL_SECONDS = 0.25


class ClusterError(HloscopeError):
    """A cluster the sweep cannot use."""


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None where there is none."""
    return _proc_kib("/proc/meminfo", "MemAvailable:")


def _resident(pid: int) -> int | None:
    return _proc_kib(f"/proc/{pid}/status", "VmRSS:")


def _proc_kib(path: str, key: str) -> int | None:
    """The `key  N kB` line of a /proc file, in bytes; None where there is none."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def worker_env(target: dict, base: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the caller's, the deviceless variables, and for `cpu:N` the
    caller's XLA_FLAGS with N host devices."""
    env = dict(os.environ if base is None else base)
    env.update(DEVICELESS_ENV)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    if target["kind"] == "cpu":
        flags.append(f"--xla_force_host_platform_device_count={target['devices']}")
    env["XLA_FLAGS"] = " ".join(flags)
    return env


def compile_variant(request: dict, python: str | None = None, timeout: float = 1800,
                    memory_limit: int | None = None) -> dict:
    """Compile one variant in a fresh `python` process; return `{"text", "xla", "error",
    "stage", "seconds"}` (`text` None, `error` a line and `stage` where, when it failed)."""
    start = time.monotonic()
    out = tempfile.mkdtemp(prefix="hloscope-sweep-")
    try:
        request = dict(request, out_dir=out)
        with open(os.path.join(out, "stderr.txt"), "w+") as err:
            proc = subprocess.Popen([python or sys.executable, WORKER], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=err, env=worker_env(request["target"]),
                                    cwd=_cwd(request, out), text=True)
            proc.stdin.write(json.dumps(request))
            proc.stdin.close()
            why = _watch(proc, start, timeout, memory_limit)
            err.seek(0)
            stderr = err.read()
        seconds = time.monotonic() - start
        if why is None and proc.returncode == 0:
            with open(os.path.join(out, "module.hlo.txt")) as f:
                text = f.read()
            with open(os.path.join(out, "xla.json")) as f:
                xla = json.load(f)
            return {"text": text, "xla": xla, "error": None, "stage": None, "seconds": seconds}
        error, stage = (why, "limit") if why else _failure(out, proc.returncode, stderr)
        return {"text": None, "xla": None, "error": error, "stage": stage, "seconds": seconds}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _cwd(request: dict, fallback: str) -> str:
    """Where the factory runs: the caller's directory (its relative paths mean what they did
    there), or on a machine without it, the worker's own."""
    cwd = request.get("cwd")
    return cwd if cwd and os.path.isdir(cwd) else fallback


def _watch(proc: subprocess.Popen, start: float, timeout: float, memory_limit: int | None) -> str | None:
    """Wait for the worker; kill it and say why past the timeout or the memory limit."""
    while True:
        try:
            proc.wait(POLL_SECONDS)
            return None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() - start > timeout:
            proc.kill()
            proc.wait()
            return f"timed out after {timeout:g} s"
        rss = _resident(proc.pid) if memory_limit else None
        if rss is not None and rss > memory_limit:
            proc.kill()
            proc.wait()
            return (f"out of host memory: the compile used {rss / 2**30:.1f} GiB, more than the "
                    f"{memory_limit / 2**30:.1f} GiB a worker may (--worker-memory)")


def _failure(out: str, returncode: int, stderr: str) -> tuple[str, str]:
    """The worker's own one line and stage (error.json), else what its exit says."""
    try:
        with open(os.path.join(out, "error.json")) as f:
            said = json.load(f)
            return said["error"], said["stage"]
    except (OSError, ValueError, KeyError):
        pass
    if returncode in (-9, 137):
        return "the worker was killed (SIGKILL: out of host memory?)", "killed"
    lines = [line for line in stderr.splitlines() if line.strip()]
    tail = lines[-1].strip() if lines else "no message"
    return f"the worker exited with status {returncode}: {tail}", "crashed"



def run_local(requests: list[dict], jobs: int, python: str | None, timeout: float,
              memory_limit: int | None) -> Iterator[tuple[int, dict]]:
    """Each request in a worker process of its own, `jobs` at a time (concurrent.futures
    threads, each waiting on its process); yields (index, answer) as each ends."""
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="hloscope-sweep") as pool:
        futures = {pool.submit(compile_variant, r, python, timeout, memory_limit): i for i, r in enumerate(requests)}
        for f in as_completed(futures):
            yield futures[f], f.result()


def run_on_cluster(requests: list[dict], address, python: str | None, timeout: float,
                   memory_limit: int | None) -> Iterator[tuple[int, dict]]:
    """Each request a task of the Dask distributed scheduler at `address` (or a
    `distributed.Client`/`LocalCluster`); the task starts the worker process on the Dask
    worker that runs it. Yields (index, answer) as each ends."""
    try:
        import distributed
    except ImportError:
        raise ClusterError('--cluster needs Dask distributed: pip install "hloscope[cluster]"') from None
    own = not isinstance(address, distributed.Client)
    client = distributed.Client(address) if own else address
    try:
        futures = [client.submit(compile_variant, r, python, timeout, memory_limit, pure=False,
                                 key=f"hloscope-sweep-{i}-{os.getpid()}-{time.time_ns()}")
                   for i, r in enumerate(requests)]
        index = {f.key: i for i, f in enumerate(futures)}
        for f in distributed.as_completed(futures):
            try:
                answer = f.result()
            except Exception as e:  # the task itself died (a worker lost): the row says so
                answer = {"text": None, "xla": None, "error": f"the cluster lost the task: {type(e).__name__}: {e}",
                          "stage": "cluster", "seconds": 0.0}
            yield index[f.key], answer
    finally:
        if own:
            client.close()


__all__ = ["ClusterError", "available_memory", "compile_variant", "run_local", "run_on_cluster", "worker_env"]
