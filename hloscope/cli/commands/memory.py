import click

from ...htmlreport import memory_page, write_html
from ...report.memory import memory_report, roles_report
from . import (
    emit,
    file_labels,
    input_files,
    json_option,
    load_inputs,
    module_option,
    require_scheduled,
    with_file,
)


@click.command()
@input_files()
@module_option
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many buffers live at the peak to list.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, writable=True), metavar="OUT",
              help="Also write OUT: one self-contained HTML page with the timeline, the peak and its buffers.")
@click.option("--by", "by", type=click.Choice(["role"]), default=None,
              help="role: what the device holds at the peak by role (parameters, optimizer state, inputs, "
                   "gathered parameters, gradients, activations, temporaries, unknown); JSON adds by_role.")
@json_option
def memory(files, module_regex, top, as_json, html_out, by):
    """Memory figures of FILE... (bytes per device, as compiled.memory_analysis() names them),
    the peak's position in the schedule and the buffers live there.

    \b
    temp       the device-memory temp allocation as XLA packs it (temp_size_in_bytes); on
               TPU as libtpu reports it: 2 x the HBM temp allocation (16 KiB-aligned) less
               its peak buffers (noted); within 1% at real scale (packing, liveness)
    arguments  the entry parameters' allocations (argument_size_in_bytes)
    outputs    the allocations of what the step returns (output_size_in_bytes)
    aliased    the part of the arguments donated to outputs (alias_size_in_bytes)
    total      arguments + outputs - aliased + temp: what the device holds for the step
    peak       XLA's peak_memory_in_bytes: the largest buffer of every argument, constant
               and output allocation plus the most heap bytes live at one position of the
               schedule (no packing); on CPU (no heap trace) the first part only, no temp
    max live   the most temp bytes live at one position of the schedule: the peak

    For a module of an XLA dump, XLA's own figures (from the dump's buffer assignment beside
    it) are shown on the line "XLA (buffer assignment)", and in JSON as "xla_buffer_assignment"."""
    loaded = load_inputs(files, module_regex)
    require_scheduled(loaded, "the memory analysis")
    results = [x.module.memory() for x in loaded]
    xla = [x.xla_figures() for x in loaded]
    if html_out:
        # After the analysis: bad input writes nothing, and the page appears whole or not at all.
        write_html(html_out, memory_page(results, [x.file for x in loaded],
                                         [x.module.role_timelines() for x in loaded],
                                         [x.module.roles() for x in loaded]))
        click.echo(f"wrote {html_out}", err=True)
    roles = [x.module.roles() for x in loaded] if by == "role" else None

    def payload():
        return {"modules": [with_file(x, {**r.to_dict(), **({"xla_buffer_assignment": f.to_dict()} if f else {}),
                                          **({"by_role": dict(roles[n].by_role),
                                              "temp_by_role": dict(roles[n].temp_by_role),
                                              "held_at_peak": [b.to_dict() for b in roles[n].buffers]}
                                             if roles else {})})
                            for n, (x, r, f) in enumerate(zip(loaded, results, xla))]}

    def render():
        out = memory_report(results, top, file_labels(loaded), xla)
        if roles:
            out += roles_report(roles, [x.module.role_timelines() for x in loaded])
        return out

    emit(payload, as_json, render)
    return 0
