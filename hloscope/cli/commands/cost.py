import click

from ...analysis.cost import GROUP_KEYS
from ...analysis.hardware import TARGETS
from ...analysis.roofline import roofline
from ...report.cost import cost_report
from . import (
    emit,
    file_labels,
    input_files,
    json_option,
    load_inputs,
    module_option,
    with_file,
)


@click.command()
@input_files()
@module_option
@click.option("--by", type=click.Choice(GROUP_KEYS),
              help="Also sum the costs per op_name, source line, computation or opcode.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many of the costliest instructions (or groups) to list.")
@click.option("--target", type=click.Choice(sorted(TARGETS)),
              help="Add a roofline ESTIMATE of the step's time from the target's published peak FLOP/s, "
                   "HBM and interconnect bandwidth.")
@json_option
def cost(files, module_regex, by, top, target, as_json):
    """FLOPs, bytes accessed and collective bytes of one step of FILE..., per device.

    \b
    flops            counted as XLA's HloCostAnalysis counts them (a dot 2 × result
                     elements × contracted size, elementwise ops 1 per element, a fusion
                     its fused ops, ...), each instruction × how often it runs: loops ×
                     their trip counts
    XLA convention   the figure XLA's cost_analysis() reports: a while loop's body and
                     condition counted ONCE (jax-ml/jax#18672)
    bytes accessed   operands and results as XLA counts them (a fusion at its boundary)
    collective bytes result bytes of each collective × how often it runs, by kind; wire
                     bytes estimate what each device sends under ring algorithms
    recompute        FLOPs of ops that replay the forward pass (jax.checkpoint's
                     rematted_computation, XLA's .remat clones)
    --target         a roofline ESTIMATE from published peak figures, not a measurement
    """
    loaded = load_inputs(files, module_regex)
    results = [x.module.cost() for x in loaded]
    estimates = [roofline(r, target) for r in results] if target else None

    def payload():
        modules = []
        for k, (x, r) in enumerate(zip(loaded, results)):
            entry = r.to_dict(by=by, top=top)
            if estimates:
                entry["roofline"] = estimates[k].to_dict()
            modules.append(with_file(x, entry))
        return {"modules": modules}

    emit(payload, as_json, lambda: cost_report(results, by, top, file_labels(loaded), estimates))
    return 0
