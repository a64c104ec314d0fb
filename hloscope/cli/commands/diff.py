import functools

import click

from ...api.compare import diff as diff_modules
from ...api.compare import diff_with_b_ahead, pair_modules, work_out_side
from ...api.loading import reading_ahead
from ...htmlreport import diff_page, write_html
from ...report.diff import diff_report
from . import emit, json_option, load_inputs, module_option, note, require_scheduled, warn


def _pairs(a_side, b_side):
    """The inputs' modules to compare (`pair_modules`), saying which are left out."""
    pairing = pair_modules(a_side, b_side, name=lambda x: x.module.name)
    if pairing.only_a or pairing.only_b:
        note("compared module by module, by name; only in A: " + (", ".join(pairing.only_a) or "none")
             + "; only in B: " + (", ".join(pairing.only_b) or "none"))
    for x, y in pairing.unlike(name=lambda x: x.module.name):
        warn(f"A is module {x} and B is module {y}: two different programs? compared anyway")
    if not pairing.pairs:
        raise click.UsageError("A and B hold no module of the same name; pick one of each with --module")
    return pairing.pairs


@click.command()
@click.argument("a", type=click.Path(allow_dash=True), metavar="A")
@click.argument("b", type=click.Path(allow_dash=True), metavar="B")
@module_option
@click.option("--top", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many instructions to show per cause and side.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, writable=True), metavar="OUT",
              help="Also write the diff as one self-contained HTML page (the causes, both timelines by role).")
@json_option
def diff(a, b, module_regex, top, html_out, as_json):
    """Explain the temp-memory gap of B against A (each a file, `-`, or an XLA dump directory).

    \b
    The gap in XLA's temp size splits exactly into causes: for each role (gathered
    parameters, gradients, activations, ...) the change in bytes of that role
    live at each side's peak, plus the change in what best-fit packing adds around them.
    The causes add up to the gap. Collective counts and held gathers of both sides follow.
    Two dump directories (or multi-module files) are compared module by module, by name.
    """
    # B's text is parsed by a child while A's is here; the child then works out B's side of
    # the diff (into the cache), and what the picture draws of B, while this process works
    # out A's.
    then = functools.partial(work_out_side, timelines=html_out is not None)
    with reading_ahead([b], module_regex, then=then) as ahead:
        first = load_inputs([a], module_regex)
        ahead.stored()
        sides = first, load_inputs([b], module_regex)
        for side in sides:
            require_scheduled(side, "the diff")
        pairs = _pairs(*sides)
        b_worked_out = ahead.worked_out if ahead.working_out and len(sides[1]) == 1 else None
        a_timelines = None
        if html_out and b_worked_out is not None:
            # What the picture draws of A first, while the child is still at work: the
            # memory model it builds serves A's side of the diff next.
            a_timelines = pairs[0][0].module.role_timelines()
        results = [diff_modules(x.module, y.module, labels=(x.file, y.file)) if b_worked_out is None
                   else diff_with_b_ahead(x.module, y.module, b_worked_out, labels=(x.file, y.file))
                   for x, y in pairs]
    if html_out:
        x, y = pairs[0]
        if a_timelines is None:
            a_timelines = x.module.role_timelines()
        write_html(html_out, diff_page(results[0], (x.file, y.file), (a_timelines, y.module.role_timelines())))
        click.echo(f"wrote {html_out}", err=True)

    def payload():
        payloads = []
        for (x, y), r in zip(pairs, results):
            p = r.to_dict()
            p["a"]["file"], p["b"]["file"] = x.file, y.file
            payloads.append({"name": x.module.name, **p})
        return payloads[0] if len(payloads) == 1 else {"modules": payloads}

    emit(payload, as_json, lambda: [row for r in results for row in diff_report(r, top)])
    return 0
