"""One variant of a sweep, compiled in a fresh process: `python worker.py < REQUEST.json`.

Run as a script (never imported by hloscope, never forked from a process that has JAX's
threads): it needs only the standard library and jax. The parent (hloscope.sweeps.launch) sets
the environment before this process starts, so XLA_FLAGS and the deviceless-TPU variables are
in place before jax initialises. The request names the user's script (its text travels with
it, so a worker on another machine needs no copy), the factory, the knobs, the target and the
directory to write to. Written there:

- `module.hlo.txt`: `compiled.as_text()`;
- `xla.json`: every integer field of `compiled.memory_analysis()`, `compiled.cost_analysis()`,
  the jax/jaxlib versions, the device kind, the compile time;
- or `error.json`: `{"error": one line, "stage": factory|compile|devices, "traceback": ...}`,
  and exit status 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import types

ACCELERATOR_EXTRA = 'pip install "hloscope[accelerators]"'


class StageError(Exception):
    """A failure of one stage, said in one line."""

    def __init__(self, stage: str, message: str, trace: str = ""):
        super().__init__(message)
        self.stage, self.trace = stage, trace


def _devices(target: dict):
    import importlib.util

    import jax

    if target["kind"] == "cpu":
        devices = jax.devices("cpu")
        if len(devices) < target["devices"]:
            raise StageError("devices", f"{target['name']}: JAX has {len(devices)} host devices, not "
                             f"{target['devices']} (is XLA_FLAGS's --xla_force_host_platform_device_count set?)")
        return devices[:target["devices"]]
    from jax.experimental import topologies

    if target["platform"] == "tpu":
        if importlib.util.find_spec("libtpu") is None:
            raise StageError("devices", f"{target['name']}: compiling for TPU without a device needs libtpu "
                             f"(jax[tpu]); install the accelerators extra: {ACCELERATOR_EXTRA}")
        return topologies.get_topology_desc(topology_name=f"{target['topology_name']}:{target['topology']}",
                                            platform="tpu").devices
    if importlib.util.find_spec("jax_cuda12_plugin") is None and importlib.util.find_spec("jax_plugins.xla_cuda12") is None:
        raise StageError("devices", f"{target['name']}: compiling for H100 without a device needs the CUDA PJRT "
                         f"plugin (jax-cuda12-plugin, jax-cuda12-pjrt); install the accelerators extra: {ACCELERATOR_EXTRA}")
    return topologies.get_topology_desc(topology_name=target["topology_name"], platform="cuda",
                                        target_config=target["target_config"], topology=target["topology"]).devices


def _factory(request: dict):
    """The user's factory: the script's text run as a module named after its file, its folder
    first on sys.path (so it imports its neighbours as it would run)."""
    path = request["script_path"]
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(folder):
        sys.path.insert(0, folder)
    module = types.ModuleType(os.path.splitext(os.path.basename(path))[0])
    module.__file__ = path
    sys.modules[module.__name__] = module
    exec(compile(request["script_text"], path, "exec"), module.__dict__)
    factory = getattr(module, request["function"], None)
    if not callable(factory):
        raise StageError("factory", f"{path} defines no function {request['function']!r}")
    return factory


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def _memory_fields(mem) -> dict:
    out = {}
    for name in sorted(dir(mem)):
        value = getattr(mem, name, None)
        if not name.startswith("_") and isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def _cost(cost):
    if isinstance(cost, (list, tuple)):  # older jax: one dict per computation
        cost = cost[0] if cost else None
    return None if cost is None else {str(k): float(v) for k, v in cost.items()}


def compile_one(request: dict) -> None:
    out = request["out_dir"]
    try:
        factory = _factory(request)
    except StageError:
        raise
    except BaseException as e:
        raise StageError("factory", f"the script failed to load: {_one_line(e)}", traceback.format_exc()) from None
    try:
        devices = _devices(request["target"])
    except StageError:
        raise
    except Exception as e:
        raise StageError("devices", f"{request['target']['name']}: {_one_line(e)}", traceback.format_exc()) from None
    try:
        made = factory(devices, **request["knobs"])
        fn, args = made
    except Exception as e:
        raise StageError("factory", f"the factory raised {_one_line(e)}", traceback.format_exc()) from None
    import jax
    import jaxlib

    start = time.perf_counter()
    try:
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        compiled = jitted.lower(*args).compile()
    except Exception as e:
        raise StageError("compile", f"the compile failed: {_one_line(e)}", traceback.format_exc()) from None
    seconds = time.perf_counter() - start
    text = compiled.as_text()
    try:
        memory = _memory_fields(compiled.memory_analysis())
    except Exception:
        memory = None
    try:
        cost = _cost(compiled.cost_analysis())
    except Exception:
        cost = None
    with open(os.path.join(out, "module.hlo.txt"), "w") as f:
        f.write(text)
    xla = {"memory_analysis": memory, "cost_analysis": cost, "jax_version": jax.__version__,
           "jaxlib_version": jaxlib.__version__, "device_kind": getattr(devices[0], "device_kind", None),
           "compile_seconds": round(seconds, 3), "xla_flags": os.environ.get("XLA_FLAGS", "")}
    with open(os.path.join(out, "xla.json"), "w") as f:
        json.dump(xla, f, indent=1, sort_keys=True)


def main() -> int:
    request = json.load(sys.stdin)
    try:
        compile_one(request)
    except StageError as e:
        with open(os.path.join(request["out_dir"], "error.json"), "w") as f:
            json.dump({"error": str(e), "stage": e.stage, "traceback": e.trace}, f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
