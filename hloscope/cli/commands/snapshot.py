import click

from ...snapshots import CUT, SUFFIX, dumps, snapshot as take_snapshot, write
from . import input_files, json_option, load_inputs, module_option, require_scheduled


@click.command()
@input_files(multiple=False)
@module_option
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, allow_dash=True), metavar=f"STEP{SUFFIX}",
              help="Write the snapshot there (default: standard output).")
@click.option("--name", metavar="STEP", help="What the step is called (a history's step; default: the module's name).")
@click.option("--jax-version", metavar="V", help="The jax that compiled it (the text does not say).")
@click.option("--jaxlib-version", metavar="V", help="The jaxlib that compiled it.")
@click.option("--source-root", type=click.Path(file_okay=False), metavar="DIR",
              help="Write source lines relative to DIR (a repository's root), the same on every machine.")
@click.option("--cut", type=click.IntRange(1), default=CUT, show_default=True,
              help="Buffers kept of each role at the peak (and held all-gathers); the rest are counted.")
@json_option
def snapshot(files, module_regex, output, name, jax_version, jaxlib_version, source_root, cut, as_json):
    """Write a small, stable summary of one compilation, to commit and check against.

    It keeps the memory figures, the bytes held at the peak by role, each role's largest
    temp buffers at the peak (instruction, op_name, source, bytes; the bytes below the cut as
    a figure), the collectives by kind (static and per step, bytes), the held all-gathers,
    FLOPs, recomputed FLOPs and collective bytes, and a key (module, target). JSON with sorted
    keys, one value per line: a change reads as a git diff. Check a later compilation against
    it with `hloscope check NEW --baseline STEP.hloscope.json --max-growth 5%`. Format:
    docs/json.md.
    """
    loaded = load_inputs(files, module_regex)
    if len(loaded) != 1:
        raise click.UsageError(f"a snapshot keeps one module and {', '.join(dict.fromkeys(x.file for x in loaded))} "
                               f"hold {len(loaded)} ({', '.join(x.module.name for x in loaded)}): pick one with "
                               "--module REGEX")
    require_scheduled(loaded, "a snapshot")
    snap = take_snapshot(loaded[0].module, name=name, jax_version=jax_version, jaxlib_version=jaxlib_version, cut=cut,
                         source_root=source_root)
    if output not in (None, "-"):
        write(output, snap)
    if output in (None, "-") or as_json:
        click.echo(dumps(snap), nl=False)
    return 0
