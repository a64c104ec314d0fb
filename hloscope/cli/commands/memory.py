import click

from ...report import memory_report
from . import emit, input_files, json_option, load_modules


@click.command()
@input_files()
@click.option("--top", default=10, show_default=True, help="How many buffers live at the peak to list.")
@json_option
def memory(file, top, as_json):
    """Temp, argument, output and alias bytes of FILE, the peak and the buffers live there."""
    results = [m.memory() for m in load_modules(file)]
    emit({"modules": [r.to_dict() for r in results]}, as_json, lambda: memory_report(results, top))
    return 0
