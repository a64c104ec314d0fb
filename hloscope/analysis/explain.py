"""Why a diff's leading cause grew, what it is not, and what to change: the words after the numbers.

The causes of a diff (analysis.diff) say which role's bytes at the peak moved. This module
turns the leading one into what a user acts on:

- the mechanism, read from where the bytes sit at the peak (`RoleBuffer.held_in`): gradients
  waiting in reductions, gradients carried by a loop (accumulators), saved activations, gathered
  weights; and what the other side does instead (reductions run inside a loop, recompute);
- the suspects ruled out, with their bytes at the peak (held all-gathers, the usual suspect);
- a lever from `LEVERS`, with its price. Each lever names the fixture pair (lever off, lever
  on) that shows it: the tests check XLA's own temp size of that pair, so the table offers
  nothing XLA was not seen to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..encode import Encoded
from ..units import human_bytes, human_flops
from .collectives import CollectivesResult

REDUCTIONS = ("all-reduce", "reduce-scatter")
_WAITING = {f"for {k}": k for k in REDUCTIONS}
"""`RoleBuffer.held_in` of a value waiting for a reduction → that reduction."""


@dataclass(frozen=True)
class Lever(Encoded):
    """One thing a user can change, when it helps, and what it costs."""

    name: str
    mechanism: str
    """The mechanism it answers (`Explanation.mechanism`)."""
    what: str
    price: str
    shown_by: tuple[str, str]
    """The fixture pair (lever off, lever on) whose XLA temp sizes show it."""


LEVERS = (
    Lever("gradient accumulation", "gradients_in_reductions",
          "accumulate gradients over micro-batches (a lax.scan over chunks of the batch, the "
          "accumulator sharded like the parameters): each micro-batch's gradients are reduced "
          "inside the loop, not every layer's full-size gradients at once",
          "one set of gradient reductions per micro-batch (collective bytes × micro-batches) and "
          "smaller matmuls",
          ("gpu_hsdp_optgrads_accum1", "gpu_hsdp_optgrads_accum2")),
    Lever("rematerialization", "saved_activations",
          "save fewer activations: jax.checkpoint each layer with a policy that saves less "
          "(dots_with_no_batch_dims_saveable, then nothing_saveable)",
          "the backward pass recomputes the forward pass: more FLOPs",
          ("gpu_remat_dots", "gpu_remat_full")),
    Lever("re-gather in the backward pass", "gathered_weights",
          "let the backward pass gather the weights again instead of keeping them from the "
          "forward pass: jax.checkpoint each layer (the all-gathers are recomputed with it; unless XLA "
          "schedules the re-gathers early, as `gathers` then says)",
          "a second all-gather per layer and the recomputed forward FLOPs",
          ("gpu_hsdp_accum1", "gpu_remat_full")),
)
"""Every lever the sentences offer, each shown by a fixture pair."""


@dataclass(frozen=True)
class Explanation(Encoded):
    mechanism: str | None
    """`gradients_in_reductions`, `gradient_accumulators`, `gradients_being_formed`,
    `saved_activations`, `gathered_weights`, or None where the buffers do not say."""
    words: str
    """The mechanism, what the other side does instead, and the suspects ruled out."""
    lever: Lever | None


def mechanism(role: str | None, held) -> str | None:
    """The mechanism behind a role's bytes at the peak (`held`, a diff's RoleAtPeak), from the
    place that holds most of them."""
    if role is None or held is None or not held.places:
        return None
    place = max(held.places, key=lambda p: p.bytes).place  # the first of equals
    if role == "gradients":
        if place in REDUCTIONS or place in _WAITING:
            return "gradients_in_reductions"
        if place == "loop":
            return "gradient_accumulators"
        return "gradients_being_formed"
    return {"activations": "saved_activations", "gathered_parameters": "gathered_weights"}.get(role)


def _reductions(held) -> tuple[dict[str, int], int]:
    """The reductions the gradients sit in (distinct instructions by kind), and the bytes of
    the gradients in them or waiting for one."""
    kinds = {p.place: p.instructions for p in held.places if p.place in REDUCTIONS}
    waiting = sum(p.bytes for p in held.places if p.place in REDUCTIONS or p.place in _WAITING)
    return kinds, waiting


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _in_loop(collectives: CollectivesResult) -> list[str]:
    """The reduction kinds a module runs more often than it writes them (inside a loop)."""
    return [k for k in REDUCTIONS if (collectives.tally(k).dynamic_count or 0) > collectives.tally(k).count]


def explain(role: str | None, keeper: str, other: str, held,
            keeper_collectives: CollectivesResult, other_collectives: CollectivesResult,
            keeper_gathers: tuple[int, int], recompute: tuple[int, int] | None = None) -> Explanation:
    """The leading cause `role`, held more by `keeper` (its buffers of that role at its peak:
    `held`, a diff's RoleAtPeak), against `other`. `keeper_gathers`: how many all-gathers the
    keeper holds from forward into backward, and their bytes at its peak. `recompute`: FLOPs
    recomputed by (keeper, other)."""
    kind = mechanism(role, held)
    total = held.bytes if held is not None else 0
    words = []
    if kind == "gradients_in_reductions":
        kinds, waiting = _reductions(held)
        homes = ", ".join(_plural(n, k) for k, n in kinds.items())
        waited = sorted({_WAITING[p.place] for p in held.places if p.place in _WAITING})
        where = (f"in {homes}" if homes else "") + (" and " if homes and waited else "") + (
            f"waiting for {' and '.join(k + 's' for k in waited)}" if waited else "")
        words.append(f"{keeper} holds full-size gradients {where} at its peak ({human_bytes(waiting, digits=1)})"
                     + (", though it reduces inside a loop already" if _in_loop(keeper_collectives)
                        else ", reduced together after the backward pass"))
        inside = _in_loop(other_collectives)
        if inside:
            words.append(f"{other} runs its {' and '.join(k + 's' for k in inside)} inside a loop, "
                         "a micro-batch's gradients at a time")
    elif kind == "gradient_accumulators":
        words.append(f"{keeper} carries gradients across a loop (accumulators, {human_bytes(total, digits=1)})")
    elif kind == "gradients_being_formed":
        forming = sum(p.bytes for p in held.places if p.place is None)
        words.append(f"{keeper}'s peak falls while its backward pass forms gradients, before they are reduced or "
                     f"accumulated ({human_bytes(forming, digits=1)})")
    elif kind == "saved_activations":
        words.append(f"{keeper} keeps more activations for the backward pass ({human_bytes(total, digits=1)})")
        if recompute and recompute[1] > recompute[0]:
            words.append(f"{other} recomputes {human_flops(recompute[1] - recompute[0])} more in its backward pass instead")
    elif kind == "gathered_weights":
        words.append(f"{keeper} keeps all-gathered weights live at its peak ({human_bytes(total, digits=1)})")
    n, at_peak = keeper_gathers
    if kind != "gathered_weights" and n:
        words.append(f"not the {'held all-gather' if n == 1 else f'{n} held all-gathers'}: "
                     f"{human_bytes(at_peak, digits=1)} of {'it' if n == 1 else 'them'} "
                     f"is live at {keeper}'s peak")
    lever = next((lv for lv in LEVERS if lv.mechanism == kind), None)
    if kind == "gradients_in_reductions" and _in_loop(keeper_collectives):
        lever = None  # the keeper accumulates already: that lever is pulled, no other is shown to work
    return Explanation(kind, "; ".join(words), lever)

