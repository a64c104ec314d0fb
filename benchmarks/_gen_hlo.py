"""Child process for benchmarks/parse.py: compile an unrolled, FSDP-sharded transformer
train step with JAX on 8 fake CPU devices and write `compiled.as_text()` to a file.

Run as:  python benchmarks/_gen_hlo.py OUT_PATH LAYERS HEADS D_MODEL D_FF SEQ BATCH [SCOPES [GROUPS [DISTINCT]]]
GROUPS=G > 0 splits the LAYERS unrolled layers into G `jax.lax.scan`s of two iterations each
(every iteration runs its own weights, stacked on a leading axis of 2), so the text holds
LAYERS layers (forward and backward) in 2×G while bodies, and the model runs 2×LAYERS. XLA's
CPU fusion pass needs memory quadratic in one computation's instruction count: unrolled into
the entry, 144 layers cannot be compiled in 24 GB, while in bodies of LAYERS/G layers they can.
SCOPES=1 wraps the model in `jax.named_scope`s shaped like a Flax/MaxText module tree
(transformer/decoder/layers_N/self_attention/head_N/..., optimizer/adam/...), so `op_name`
metadata carries module paths as real model dumps do; SCOPES=0 (the default) adds none: the
instructions are then exactly those generated before this option existed (only the source
line numbers in the module's stack-frame table differ, as after any edit to this file).
DISTINCT=1 gives every layer widths of its own (attention width D_MODEL + 2·HEADS·i, MLP width
D_FF + 32·i for layer i), so no two layers' computations are alike, even up to names: a
module whose bodies do not repeat, beside the default one whose layers repeat.
XLA_FLAGS must carry --xla_force_host_platform_device_count=8 before jax is imported;
parse.py sets it in the child's environment, and this file sets it too as a fallback.
"""

import contextlib
import os
import sys
import time

_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def main():
    out, layers, heads, d, ff, seq, batch = sys.argv[1], *map(int, sys.argv[2:8])
    scoped = len(sys.argv) > 8 and sys.argv[8] not in ("", "0")
    groups = int(sys.argv[9]) if len(sys.argv) > 9 else 0
    distinct = len(sys.argv) > 10 and sys.argv[10] not in ("", "0")
    reps = 2  # scan iterations per group
    if groups:
        assert layers % groups == 0, (layers, groups)
    hd = d // heads

    def scope(name):
        # Only with SCOPES=1: otherwise a no-op, so the default module is unchanged.
        return jax.named_scope(name) if scoped else contextlib.nullcontext()
    devices = jax.devices()
    assert len(devices) == 8, devices
    mesh = Mesh(devices, ("fsdp",))
    # FSDP: every weight sharded on its first axis, the batch sharded too; XLA inserts
    # all-gathers for the weights and reduce-scatters / all-reduces for the gradients.
    wspec = NamedSharding(mesh, P("fsdp"))
    bspec = NamedSharding(mesh, P("fsdp"))

    def init_layer(key, i=0):
        k = jax.random.split(key, 6)
        s = 0.02
        da, f = (d + 2 * heads * i, ff + 32 * i) if distinct else (d, ff)  # attention and MLP widths
        return {
            "ln1": jnp.ones((d,), jnp.float32),
            "wq": jax.random.normal(k[0], (d, da), jnp.float32) * s,
            "wk": jax.random.normal(k[1], (d, da), jnp.float32) * s,
            "wv": jax.random.normal(k[2], (d, da), jnp.float32) * s,
            "wo": jax.random.normal(k[3], (da, d), jnp.float32) * s,
            "ln2": jnp.ones((d,), jnp.float32),
            "w1": jax.random.normal(k[4], (d, f), jnp.float32) * s,
            "w2": jax.random.normal(k[5], (f, d), jnp.float32) * s,
        }

    def shapes():
        layer = jax.eval_shape(init_layer, jax.random.key(0))
        if groups:
            # One stacked copy per scan iteration: [reps, ...] per weight.
            stacked = jax.tree.map(lambda a: jax.ShapeDtypeStruct((reps, *a.shape), a.dtype), layer)
            layer_list = [[stacked] * (layers // groups) for _ in range(groups)]
        elif distinct:
            layer_list = [jax.eval_shape(lambda key, i=i: init_layer(key, i), jax.random.key(0)) for i in range(layers)]
        else:
            layer_list = [layer] * layers
        params = {
            "embed": jax.ShapeDtypeStruct((1024, d), jnp.float32),
            "layers": layer_list,
            "ln_f": jax.ShapeDtypeStruct((d,), jnp.float32),
        }
        return params

    def rmsnorm(x, g):
        return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g

    def rope(x):  # x: [batch, seq, head width]
        half = x.shape[-1] // 2
        freq = 1.0 / (10000.0 ** (jnp.arange(half, dtype=jnp.float32) / half))
        ang = jnp.arange(seq, dtype=jnp.float32)[:, None] * freq[None, :]
        cos, sin = jnp.cos(ang).astype(x.dtype), jnp.sin(ang).astype(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    def block(p, x):
        with scope("pre_self_attention_layer_norm"):
            h = rmsnorm(x, p["ln1"]).astype(jnp.bfloat16)
        with scope("self_attention"):
            with scope("query"):
                q = h @ p["wq"].astype(jnp.bfloat16)
            with scope("key"):
                k = h @ p["wk"].astype(jnp.bfloat16)
            with scope("value"):
                v = h @ p["wv"].astype(jnp.bfloat16)
            mask = jnp.tril(jnp.ones((seq, seq), bool))
            outs = []
            w = q.shape[-1] // heads  # the head width (hd, or the layer's own when DISTINCT)
            for i in range(heads):  # heads unrolled too, as in hand-written per-head attention
                with scope(f"head_{i}"):
                    sl = slice(i * w, (i + 1) * w)
                    with scope("rotary_embedding"):
                        qi, ki, vi = rope(q[..., sl]), rope(k[..., sl]), v[..., sl]
                    with scope("attention_weights"):
                        att = jnp.einsum("bqd,bkd->bqk", qi, ki).astype(jnp.float32) / jnp.sqrt(w)
                        att = jnp.where(mask, att, -1e9)
                        att = jax.nn.softmax(att, axis=-1).astype(jnp.bfloat16)
                    with scope("attention_output"):
                        outs.append(jnp.einsum("bqk,bkd->bqd", att, vi))
            o = jnp.concatenate(outs, axis=-1)
            with scope("out"):
                x = x + (o @ p["wo"].astype(jnp.bfloat16)).astype(jnp.float32)
        with scope("pre_ffw_layer_norm"):
            h = rmsnorm(x, p["ln2"]).astype(jnp.bfloat16)
        with scope("mlp"):
            with scope("wi"):
                h = jax.nn.gelu(h @ p["w1"].astype(jnp.bfloat16), approximate=False)
            with scope("wo"):
                return x + (h @ p["w2"].astype(jnp.bfloat16)).astype(jnp.float32)

    def loss_fn(params, tokens):
        with scope("transformer"):
            with scope("token_embedder"):
                x = params["embed"][tokens]
            with scope("decoder"):
                if groups:
                    per = layers // groups
                    for gi, group in enumerate(params["layers"]):
                        def body(x, ps, gi=gi):
                            for j, p in enumerate(ps):  # unrolled inside the scan body
                                with scope(f"layers_{gi * per + j}"):
                                    x = block(p, x)
                            return x, None
                        with scope(f"scan_{gi}"):
                            x, _ = jax.lax.scan(body, x, group)
                else:
                    for i, p in enumerate(params["layers"]):  # unrolled on purpose: one copy per layer
                        with scope(f"layers_{i}"):
                            x = block(p, x)
                with scope("decoder_norm"):
                    x = rmsnorm(x, params["ln_f"])
            with scope("logits"):
                logits = x @ params["embed"].T
        with scope("cross_entropy_loss"):
            labels = jnp.roll(tokens, -1, axis=1)
            logp = jax.nn.log_softmax(logits, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    def train_step(params, opt, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
        # Adam, written out (no optax dependency).
        b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
        with scope("optimizer"), scope("adam"):
            mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["mu"], grads)
            nu = jax.tree.map(lambda n, g: b2 * n + (1 - b2) * g * g, opt["nu"], grads)
            params = jax.tree.map(lambda w, m, n: w - lr * m / (jnp.sqrt(n) + eps), params, mu, nu)
        return params, {"mu": mu, "nu": nu}, loss

    pshapes = shapes()
    # FSDP on the first axis of each weight; for stacked weights that is axis 1.
    psh = jax.tree.map(lambda a: NamedSharding(mesh, P(None, "fsdp")) if groups and a.ndim > 1 and a.shape[0] == reps
                       and a.shape[1] % 8 == 0 else wspec, pshapes)
    tokens = jax.ShapeDtypeStruct((batch, seq), jnp.int32)
    opt = {"mu": pshapes, "nu": pshapes}
    osh = {"mu": psh, "nu": psh}
    step = jax.jit(
        train_step, in_shardings=(psh, osh, bspec), out_shardings=(psh, osh, None), donate_argnums=(0, 1)
    )
    t0 = time.perf_counter()
    lowered = step.lower(pshapes, opt, tokens)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    text = compiled.as_text()
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    print(f"layers={layers} heads={heads} scopes={int(scoped)} groups={groups} distinct={int(distinct)} lower={t1 - t0:.1f}s compile={t2 - t1:.1f}s bytes={len(text)}", flush=True)


if __name__ == "__main__":
    main()
