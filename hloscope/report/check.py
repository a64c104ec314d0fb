"""`hloscope check`: lines of text, or GitHub workflow annotations."""

from __future__ import annotations



def _github_escape(text: str, is_property: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if is_property:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def github_annotations(violations, file: str) -> str:
    """One `::error file=FILE,title=...::message` workflow command per violation."""
    return "".join(
        f"::error file={_github_escape(file, True)},title={_github_escape('hloscope budget', True)}"
        f"::{_github_escape(v.message)}\n"
        for v in violations
    )


def check_report(violations, file: str, fmt: str = "text", modules=()) -> str:
    """`hloscope check`: each violation on a line (or as GitHub annotations), else `ok`."""
    if fmt == "github":
        return github_annotations(violations, file).rstrip("\n")
    if not violations:
        return f"{file}: ok ({', '.join(modules)} within budget)" if modules else f"{file}: ok"
    lines = [f"{file}: {len(violations)} budget violation{'s' if len(violations) != 1 else ''}"]
    lines += [f"{file}: error: {v.message}" for v in violations]
    return "\n".join(lines)
