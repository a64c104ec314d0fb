import click

from ...api.compare import match_baselines
from ...api.loading import reading_ahead
from ...budget import (
    BUDGET_KINDS,
    Budget,
    BudgetError,
    budget_from_mapping,
    load_budget,
    parse_growth,
)
from ...budget import check as run_check
from ...history import commit_id, record
from ...report.check import check_report
from ...snapshots import looks_like_snapshot, mismatch
from ...snapshots import read as read_snapshot
from ...snapshots import snapshot as take_snapshot
from . import (
    emit,
    input_files,
    json_option,
    load_inputs,
    module_option,
    note,
    require_scheduled,
    warn_unscheduled,
)


def _kind_counts(ctx, param, values):
    out = {}
    for item in values:
        kind, sep, n = item.partition("=")
        kind = kind.strip()
        if not sep or not n.strip().isdigit():
            raise click.BadParameter(f"{item!r}: write KIND=N, e.g. all-gather=200", ctx, param)
        if kind not in BUDGET_KINDS:
            raise click.BadParameter(f"unknown collective kind {kind!r}; known: {', '.join(BUDGET_KINDS)}",
                                     ctx, param)
        out[kind] = int(n)
    return out


@click.command()
@input_files()
@module_option
@click.option("--max-temp", "max_temp", metavar="SIZE", help="Temp memory budget, e.g. 40GiB, 512MB, bytes.")
@click.option("--max", "max_collectives", metavar="KIND=N", multiple=True, callback=_kind_counts,
              help="At most N collectives of KIND (all-gather, ..., send, recv, total). Repeatable.")
@click.option("--expect", "expect_collectives", metavar="KIND=N", multiple=True, callback=_kind_counts,
              help="Exactly N collectives of KIND. Repeatable.")
@click.option("--dynamic", is_flag=True, default=None,
              help="Count per step (× while trip counts) instead of instructions in the text.")
@click.option("--budget", "budget_file", type=click.Path(exists=True, dir_okay=False), metavar="TOML",
              help="Budgets from a TOML file, or from [tool.hloscope] of a pyproject.toml; options override.")
@click.option("--baseline", type=click.Path(allow_dash=True), metavar="OLD",
              help="A compilation of the same program to compare with (file, dump directory, or a snapshot "
                   "STEP.hloscope.json of `hloscope snapshot`): with --max-growth, fail when temp memory grew "
                   "more than that, explaining why.")
@click.option("--max-growth", "max_growth", metavar="PCT", default=None,
              help="With --baseline: how much temp memory may grow, e.g. 5% (default 0%).")
@click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text", show_default=True,
              help="github: one ::error annotation per violation, for GitHub Actions.")
@click.option("--history", "history_file", type=click.Path(dir_okay=False), metavar="FILE.sqlite",
              help="Append one row per module to this SQLite history (commit, step, figures by role, the "
                   "verdict and its words); `hloscope history FILE.sqlite` draws the trend.")
@click.option("--commit", metavar="SHA", help="With --history: the run's commit (default: $HLOSCOPE_COMMIT, "
                                              "`git rev-parse HEAD`, $GITHUB_SHA).")
@click.option("--step", metavar="NAME", help="With --history: the step's name (default: the module's name).")
@json_option
def check(files, module_regex, max_temp, max_collectives, expect_collectives, dynamic, baseline, max_growth,
          budget_file, fmt, history_file, commit, step, as_json):
    """Exit 1 when a module of FILE... exceeds a budget, listing each violation.

    Collective counts are static (instructions in the text, an async pair once) unless
    --dynamic. An unknown dynamic count (a while loop whose trip count is neither recorded nor
    inferable from its counter) is a violation. Against a baseline (--baseline OLD.hlo, or a
    snapshot STEP.hloscope.json) with --max-growth, the violation carries the diff's sentence:
    the roles and buffers that grew; a snapshot counts but does not name its buffers below
    its cut, and the message says so.
    """
    budget = load_budget(budget_file) if budget_file else Budget()
    try:
        cli_budget = budget_from_mapping({"max-temp": max_temp, "max": max_collectives,
                                          "expect": expect_collectives, "dynamic": bool(dynamic)}, "options")
    except BudgetError as e:
        raise click.BadParameter(str(e).removeprefix("options: "), param_hint="--max-temp") from None
    budget = budget.merged(cli_budget)
    if max_growth is not None and baseline is None:
        raise click.UsageError("--max-growth compares with a baseline: give --baseline OLD")
    if max_growth is not None:
        try:
            parse_growth(max_growth)
        except BudgetError as e:
            raise click.BadParameter(str(e).removeprefix("max-growth: "), param_hint="--max-growth") from None
    if budget.empty and baseline is None:
        raise click.UsageError("nothing to check: give --max, --expect, --max-temp, --baseline or --budget")
    snap = read_snapshot(baseline) if baseline is not None and looks_like_snapshot(baseline) else None
    with reading_ahead([baseline] if baseline is not None and snap is None else [], module_regex):
        loaded = load_inputs(files, module_regex)  # the baseline parsed by a child meanwhile
    if budget.max_temp is not None or baseline is not None:
        require_scheduled(loaded, "a temp budget")
    else:
        warn_unscheduled(loaded)
    baselines = [None] * len(loaded)
    if snap is not None:
        baselines = [snap] * len(loaded)
        for x in loaded:
            other = mismatch(snap, x.module)
            if other:
                note(f"{x.file}: {other}")
    elif baseline is not None:
        old = load_inputs([baseline], module_regex)
        require_scheduled(old, "a baseline")
        baselines = match_baselines([x.module for x in loaded], [x.module for x in old])
    found = [run_check(x.module, **budget.as_kwargs(), baseline=old_module, max_growth=max_growth)
             for x, old_module in zip(loaded, baselines)]
    violations = [v for vs in found for v in vs]
    if history_file:
        require_scheduled(loaded, "a history")
        sha = commit_id(commit)
        for x, vs in zip(loaded, found):
            record(history_file, take_snapshot(x.module, name=step), step=step, commit=sha, ok=not vs,
                   words=" ".join(v.message for v in vs))
    payload = {"ok": not violations, "budget": budget.to_dict(),
               "modules": [{"file": x.file, "name": x.module.name, "violations": [v.to_dict() for v in vs]}
                           for x, vs in zip(loaded, found)]}
    if as_json:
        emit(lambda: payload, True, lambda: None)
    else:  # plain lines: annotations must not be wrapped or read as rich markup
        for file in dict.fromkeys(x.file for x in loaded):
            mine = [(x, vs) for x, vs in zip(loaded, found) if x.file == file]
            text = check_report([v for _, vs in mine for v in vs], file, fmt, [x.module.name for x, _ in mine])
            if text:
                click.echo(text)
    return 1 if violations else 0
