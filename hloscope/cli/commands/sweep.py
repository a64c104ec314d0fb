import click

from ...analysis.hardware import TARGETS
from ...htmlreport import write_html
from ...sweeps.grid import parse_grid
from ...sweeps.page import sweep_page
from ...sweeps.report import ProgressBar, sweep_report
from ...sweeps.run import sweep as run_sweep
from ...sweeps.targets import TARGET_FORMS
from . import emit, json_option


@click.command()
@click.argument("factory", metavar="SCRIPT.py:FUNCTION")
@click.option("--grid", "grid", multiple=True, required=True, metavar="NAME=V1,V2,...",
              help="A knob and its values (int, float or string); repeat for each knob. Every combination is a variant.")
@click.option("--target", required=True, metavar="TARGET", help=f"What to compile for, without the device: {TARGET_FORMS}.")
@click.option("--hbm", metavar="SIZE", help="Device memory the variants must fit in (default: the chip's; none for cpu).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Variants compiled at once, each in a worker process of its own.")
@click.option("--cluster", metavar="ADDRESS",
              help="A Dask distributed scheduler (tcp://host:8786) to run each compile on as a task instead.")
@click.option("--cache-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where compiled texts are kept (default: $HLOSCOPE_CACHE_DIR/sweep or ~/.cache/hloscope/sweep).")
@click.option("--timeout", type=click.FloatRange(min=1), default=1800, show_default=True,
              help="Seconds a compile may take; past it the variant is a row with the error.")
@click.option("--worker-memory", metavar="SIZE",
              help="Host memory one compile may use before it is stopped (default: available memory / jobs).")
@click.option("--python", "python", type=click.Path(dir_okay=False), metavar="PATH",
              help="The Python the workers run (its jax compiles; default: this one).")
@click.option("--roofline", type=click.Choice(sorted(TARGETS)),
              help="The chip whose published peaks estimate the step time (default: the target's; none for cpu).")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Also write one self-contained page: the table, memory vs estimated step time, each diff.")
@json_option
def sweep(factory, grid, target, hbm, jobs, cluster, cache_dir, timeout, worker_memory, python, roofline, html_out,
          as_json):
    """Compile FUNCTION(devices, **knobs) of SCRIPT.py for every combination of the --grid
    values on TARGET, each in a fresh process, without the device; rank the variants (those
    that fit first, then by estimated step time) and say why each differs from its best
    neighbour (one knob apart). A rerun compiles nothing: the texts are cached by the
    script's content, the knobs, the target and the jax version.

    \b
    FUNCTION returns (fn, args): a function, jitted or not, and its arguments (arrays or
    jax.ShapeDtypeStructs with shardings). A variant that fails (the factory raises, the
    compile fails, runs out of time or host memory) is a row with its error.
    """
    bar = ProgressBar()
    try:
        result = run_sweep(factory, parse_grid(grid), target, hbm=hbm, jobs=jobs, cluster=cluster,
                           cache_dir=cache_dir, timeout=timeout, worker_memory=worker_memory, python=python,
                           roofline=roofline, diffs_to_best=html_out is not None, progress=bar)
    finally:
        bar.close()
    if html_out:
        write_html(html_out, sweep_page(result))
    emit(result.to_dict, as_json, lambda: sweep_report(result))
    return 0
