"""`hloscope memory --html`: the page is self-contained, and a real browser draws what
`module.memory()` says.

The browser is Debian's chromium (`/usr/bin/chromium`, installed by `.ci/run`), driven by
playwright; playwright never downloads a browser here. Outside CI the browser tests skip when
chromium or playwright is absent; in CI (`CI` set) they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import hloscope
from hloscope.analysis.memory import LiveBuffer, MemoryAnalysis
from hloscope.htmlreport import memory_page, write_html

from .conftest import FIXTURES, ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 1000}
FIXTURE = FIXTURES / "cpu_hsdp_accum2" / "module.hlo.txt"

# Written by hand: a broadcast made wide, used by a reduce, with metadata on each step; the
# op_name of the buffer live at the peak holds "</script>", which must reach the page as text,
# not end its script.
SMALL = """\
HloModule small_step, is_scheduled=true, entry_computation_layout={(f32[256]{0})->f32[]}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[256]) -> f32[] {
  %x = f32[256]{0} parameter(0)
  %e = f32[256]{0} exponential(%x), metadata={op_name="jit(step)/exp" source_file="step.py" source_line=3}
  %wide = f32[64,256]{1,0} broadcast(%e), dimensions={1}, metadata={op_name="jit(step)/</script><b>broadcast_in_dim" source_file="step.py" source_line=4}
  %t = f32[64,256]{1,0} tanh(%wide), metadata={op_name="jit(step)/tanh" source_file="step.py" source_line=5}
  %zero = f32[] constant(0)
  %r = f32[] reduce(%t, %zero), dimensions={0,1}, to_apply=%add, metadata={op_name="jit(step)/reduce_sum" source_file="step.py" source_line=6}
  %n = f32[256]{0} negate(%e), metadata={op_name="jit(step)/neg" source_file="step.py" source_line=7}
  %r2 = f32[] reduce(%n, %zero), dimensions={0}, to_apply=%add
  ROOT %out = f32[] add(%r, %r2)
}
"""


def long_module(n: int, spike_at: int) -> str:
    """A scheduled chain of `n` steps, more than the chart has pixels: a small broadcast every
    50 steps and one large one at `spike_at`, live for a step or two."""
    lines = ["HloModule long_chain, is_scheduled=true, entry_computation_layout={(f32[16]{0})->f32[16]{0}}", "",
             "%add (a: f32[], b: f32[]) -> f32[] {", "  %a = f32[] parameter(0)", "  %b = f32[] parameter(1)",
             "  ROOT %s = f32[] add(%a, %b)", "}", "",
             "ENTRY %main (x: f32[16]) -> f32[16] {", "  %x = f32[16]{0} parameter(0)", "  %zero = f32[] constant(0)",
             "  %v0 = f32[16]{0} negate(%x)"]
    for i in range(1, n):
        prev = f"%v{i - 1}"
        if i == spike_at:
            lines += [f"  %big = f32[4096,16]{{1,0}} broadcast({prev}), dimensions={{1}}",
                      "  %folded = f32[16]{0} reduce(%big, %zero), dimensions={0}, to_apply=%add",
                      f"  %v{i} = f32[16]{{0}} add({prev}, %folded)"]
        elif i % 50 == 0:
            lines += [f"  %w{i} = f32[64,16]{{1,0}} broadcast({prev}), dimensions={{1}}",
                      f"  %f{i} = f32[16]{{0}} reduce(%w{i}, %zero), dimensions={{0}}, to_apply=%add",
                      f"  %v{i} = f32[16]{{0}} subtract({prev}, %f{i})"]
        else:
            lines.append(f"  %v{i} = f32[16]{{0}} negate({prev})")
    lines[-1] = lines[-1].replace(f"  %v{n - 1} =", f"  ROOT %v{n - 1} =")
    return "\n".join(lines + ["}", ""])


def embedded_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="hloscope-data">(.*?)</script>', page, re.DOTALL)
    assert m, "the page carries its data as one JSON document"
    return json.loads(m.group(1))


# --- the file itself ------------------------------------------------------------------------

def test_page_loads_nothing_from_anywhere():
    page = memory_page(hloscope.load(FIXTURE).memory())
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link\b|@import|url\(", page)
    # The only URL is the SVG namespace, a name the script passes to createElementNS.
    assert set(re.findall(r"https?://[^\s\"'`<>)]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page


def test_page_carries_what_memory_found():
    module = hloscope.parse(SMALL)
    r = module.memory()
    page = memory_page(r, ["small.hlo"])
    assert "</script><b>" not in page.split('id="hloscope-data">', 1)[1].split("</script>", 1)[0]
    (mod,) = embedded_data(page)["modules"]
    assert mod["title"] == "small.hlo" and mod["name"] == module.name
    assert mod["steps"] == list(r.steps)
    assert [s["values"] for s in mod["series"]] == [list(r.timeline)]
    assert mod["peak"] == {"index": r.peak_at["index"], "instruction": r.peak_at["instruction"],
                           "bytes": r.timeline[r.peak_at["index"]]}
    assert mod["live_at_peak"] == [b.to_dict() for b in r.live_at_peak]
    assert mod["figures"]["temp_bytes"] == r.temp_bytes and mod["figures"]["peak_bytes"] == r.peak_bytes
    assert mod["notes"] == list(r.notes)


def test_cli_writes_the_page(tmp_path):
    out = tmp_path / "memory.html"
    run = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(FIXTURE), "--html", str(out), "--json"],
                         check=False, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    # The JSON on stdout is unchanged by --html.
    assert json.loads(run.stdout)["modules"][0]["peak_at"] == hloscope.load(FIXTURE).memory().peak_at
    (mod,) = embedded_data(out.read_text())["modules"]
    assert mod["title"] == str(FIXTURE)
    assert [p.name for p in tmp_path.iterdir()] == ["memory.html"]  # no partial file left behind


def test_cli_writes_nothing_for_bad_input(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m, is_scheduled=true\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] add(p, nope)\n}\n")
    out = tmp_path / "memory.html"
    run = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(bad), "--html", str(out)],
                         check=False, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    assert run.stderr.startswith(f"{bad}:4:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.hlo"]


def test_an_unwritable_destination_is_named_and_exits_2(tmp_path):
    out = tmp_path / "missing-dir" / "memory.html"
    run = subprocess.run([sys.executable, "-m", "hloscope", "memory", str(FIXTURE), "--html", str(out)],
                         check=False, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    assert str(out) in run.stderr and "Traceback" not in run.stderr


# --- in a real browser ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    in_ci = bool(os.environ.get("CI"))
    if not os.access(CHROMIUM, os.X_OK):
        if in_ci:
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium for this test")
        pytest.skip(f"needs {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if in_ci:
            raise
        pytest.skip("needs the playwright package (pip install playwright)")
    with tempfile.TemporaryDirectory(prefix="hloscope-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_FLAGS, viewport=VIEWPORT)
        try:
            yield context
        finally:
            context.close()


class Opened:
    """A page of the browser opened on a file, recording console errors and requests."""

    def __init__(self, context, path: Path):
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        start = time.perf_counter()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']")
        self.wall_seconds = time.perf_counter() - start
        # From navigation start to drawn, as the page's own clock measures it.
        self.page_ms = self.page.evaluate("performance.now()")

    def tooltip(self) -> str:
        self.page.wait_for_selector("#tooltip:not([hidden])")
        return self.page.inner_text("#tooltip")

    def chart(self, n: int = 0) -> dict:
        return self.page.eval_on_selector(f"#module-{n} .chart svg", "s => ({...s.dataset})")

    def hover_step(self, step: int, n: int = 0) -> None:
        """Move the mouse over the middle of `step` on the chart (zoomed so a step is wide)."""
        svg = self.page.locator(f"#module-{n} .chart svg")
        box = svg.bounding_box()
        d = self.chart(n)
        view_width = float(d["left"]) + float(d["plotWidth"]) + 18  # the chart's right margin
        scale = box["width"] / view_width
        lo, hi = int(d["lo"]), int(d["hi"])
        x = float(d["left"]) + (step - lo + 0.5) / (hi - lo) * float(d["plotWidth"])
        self.page.mouse.move(box["x"] + x * scale, box["y"] + box["height"] * 0.6)


def open_page(context, tmp_path: Path, result, name: str, title: str) -> Opened:
    path = tmp_path / name
    write_html(path, memory_page(result, [title]))
    return Opened(context, path)


def assert_clean(opened: Opened):
    assert opened.errors == [], opened.errors
    assert opened.requests == [opened.url], "the page fetched something"


def save_screenshot(opened: Opened, path: Path) -> None:
    opened.page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert path.stat().st_size > 0


def test_fixture_page_in_chromium(browser, tmp_path):
    r = hloscope.load(FIXTURE).memory()
    opened = open_page(browser, tmp_path, r, "fixture.html", str(FIXTURE))
    page = opened.page
    assert_clean(opened)

    at = r.peak_at["index"]
    marker = page.locator("#module-0 .peak-marker")
    assert marker.is_visible()
    assert marker.get_attribute("data-step") == str(at)
    assert r.peak_at["instruction"] in page.text_content("#module-0 .peak-label")
    # What the analysis notes (how a figure was found) is said under the figures.
    assert [n.inner_text() for n in page.locator("#module-0 .note").all()] == list(r.notes)
    card = page.locator("#module-0 .figure").first.inner_text()
    assert f"{r.temp_bytes:,} B" in card and "packed" in card  # CPU: XLA's packed allocation

    marker.hover()
    tip = opened.tooltip()
    assert f"position {at:,}: {r.peak_at['instruction']}" in tip
    assert f"({r.timeline[at]:,} B)" in tip
    assert r.timeline[at] == r.temp_max_live_bytes

    # The buffers live at the peak: one row each, largest first; hover and click tell all.
    rows = page.locator("#module-0 .buf")
    assert rows.count() == min(len(r.live_at_peak), 200)
    first = r.live_at_peak[0]
    rows.nth(0).hover()
    tip = opened.tooltip()
    for text in (first.instruction, first.shape, f"{first.bytes:,} B", first.op_name or "—", first.source or "—"):
        assert text in tip
    rows.nth(0).click()
    assert first.instruction in page.inner_text("#module-0 .details")
    assert sum(b.bytes for b in r.live_at_peak) == r.timeline[at]

    save_screenshot(opened, tmp_path / "memory-fixture.png")
    assert_clean(opened)


def test_the_notes_of_a_tpu_page_are_under_its_figures(browser, tmp_path):
    """How a figure was found (TPU: libtpu's rule for temp) is said where the figure is."""
    path = FIXTURE.parent.parent / "tpu_hsdp_accum1" / "module.hlo.txt"
    r = hloscope.load(path).memory()
    assert r.notes
    opened = open_page(browser, tmp_path, r, "tpu.html", str(path))
    assert [n.inner_text() for n in opened.page.locator("#module-0 .note").all()] == list(r.notes)
    # The temp figure is named as what it is on TPU: libtpu's, not a packed allocation.
    card = opened.page.locator("#module-0 .figure").first.inner_text()
    assert f"{r.temp_bytes:,} B" in card and "libtpu" in card and "packed" not in card
    # Its line and legend entry are drawn where there is a figure to draw (here libtpu's 0).
    assert ("libtpu" in opened.page.inner_text("#module-0 .legend")) == (r.temp_bytes > 0)
    save_screenshot(opened, tmp_path / "memory-tpu.png")
    assert_clean(opened)


def test_small_module_hover_zoom_and_escaping(browser, tmp_path):
    r = hloscope.parse(SMALL).memory()
    opened = open_page(browser, tmp_path, r, "small.html", "small.hlo")
    page = opened.page
    assert_clean(opened)
    assert int(opened.chart()["hi"]) == len(r.timeline)

    # Every step is wider than a pixel here: hovering one names it and its live bytes.
    for step in range(len(r.steps)):
        opened.hover_step(step)
        tip = opened.tooltip()
        assert f"position {step:,}: {r.steps[step]}" in tip, tip
        assert f"({r.timeline[step]:,} B)" in tip, tip

    # op_name with "</script>" arrives as text.
    (row,) = [i for i, b in enumerate(r.live_at_peak) if "</script>" in (b.op_name or "")]
    page.locator("#module-0 .buf").nth(row).click()
    assert r.live_at_peak[row].op_name in page.inner_text("#module-0 .details")

    # Zoom with the inputs, then by dragging, then back with a double-click.
    page.fill("#module-0 input.from", "2")
    page.fill("#module-0 input.to", "5")
    page.press("#module-0 input.to", "Enter")
    assert (opened.chart()["lo"], opened.chart()["hi"]) == ("2", "6")
    assert "position (2–5 of" in page.text_content("#module-0 .chart .x-title")
    opened.hover_step(3)
    assert f"position 3: {r.steps[3]}" in opened.tooltip()

    svg = page.locator("#module-0 .chart svg").bounding_box()
    page.dblclick("#module-0 .chart svg")
    assert (opened.chart()["lo"], opened.chart()["hi"]) == ("0", str(len(r.timeline)))
    d = opened.chart()
    scale = svg["width"] / (float(d["left"]) + float(d["plotWidth"]) + 18)
    step_px = float(d["plotWidth"]) / len(r.timeline) * scale
    x0 = svg["x"] + float(d["left"]) * scale
    page.mouse.move(x0 + step_px * 1.5, svg["y"] + 100)
    page.mouse.down()
    page.mouse.move(x0 + step_px * 3.5, svg["y"] + 100, steps=5)
    page.mouse.up()
    assert (opened.chart()["lo"], opened.chart()["hi"]) == ("1", "4")

    page.dblclick("#module-0 .chart svg")
    save_screenshot(opened, tmp_path / "memory-small.png")
    assert_clean(opened)


def test_a_long_schedule_is_drawn_per_pixel_with_the_peak_exact(browser, tmp_path):
    r = hloscope.parse(long_module(4000, 2345)).memory()
    opened = open_page(browser, tmp_path, r, "long.html", "long")
    page = opened.page
    assert_clean(opened)
    d = opened.chart()
    columns = int(float(d["plotWidth"]))
    assert len(r.timeline) > 2 * columns, "the test needs more steps than pixels"
    assert int(d["buckets"]) == columns

    path = page.get_attribute("#module-0 path.series-max", "d")
    points = re.findall(r"(-?[\d.]+),(-?[\d.]+)", path)
    assert len(points) <= 2 * columns + 2
    # A one-step spike is still the highest point drawn, at the marker.
    cy = float(page.get_attribute("#module-0 .peak-marker", "cy"))
    assert min(float(y) for _, y in points) == pytest.approx(cy, abs=0.06)
    page.locator("#module-0 .peak-marker").hover()
    tip = opened.tooltip()
    assert f"position {r.peak_at['index']:,}: {r.peak_at['instruction']}" in tip
    assert f"({max(r.timeline):,} B)" in tip

    # Zoomed to fewer steps than pixels, each step is drawn on its own again.
    page.click("#module-0 button.zoom-peak")
    assert int(opened.chart()["buckets"]) == int(opened.chart()["hi"]) - int(opened.chart()["lo"])
    save_screenshot(opened, tmp_path / "memory-long.png")
    assert_clean(opened)


def test_a_huge_schedule_opens_in_under_two_seconds(browser, tmp_path):
    # The size of a 190K-instruction module's schedule, with thousands of buffers at the peak:
    # what matters here is how much the page carries and draws, not what the values are.
    n = 200_000
    timeline = tuple((i * 7919) % 100_003 * 4096 for i in range(n))
    at = max(range(n), key=timeline.__getitem__)
    buffers = tuple(LiveBuffer(f"fusion.{i}", 4096 * (5000 - i), f"f32[{1024 * (5000 - i)}]{{0}}",
                               f"jit(step)/layer_{i % 32}/dot_general", f"model.py:{i}") for i in range(5000))
    r = MemoryAnalysis(name="huge", temp_bytes=max(timeline), argument_bytes=0, output_bytes=0, alias_bytes=0,
                       peak_bytes=max(timeline), peak_at={"index": at, "instruction": f"fusion.{at}"},
                       live_at_peak=buffers, temp_max_live_bytes=max(timeline), timeline=timeline,
                       steps=tuple(f"fusion.{i}" for i in range(n)))
    opened = open_page(browser, tmp_path, r, "huge.html", "huge")
    assert_clean(opened)
    print(f"huge page: {opened.page_ms:.0f} ms to draw, {opened.wall_seconds:.2f} s wall")
    assert opened.page_ms < 2000
    assert opened.page.locator("#module-0 .peak-marker").is_visible()


def test_diff_page_in_chromium(browser, tmp_path):
    """`hloscope diff --html`: the sentence and the causes, then both timelines stacked by
    role; each stack adds up to that side's timeline, and hovering a step names every role's
    bytes there."""
    from hloscope.htmlreport import diff_page

    a, b = (hloscope.load(FIXTURES / n / "module.hlo.txt") for n in ("gpu_hsdp_accum1", "gpu_hsdp_accum2"))
    result = hloscope.diff(a, b)
    roles = (a.role_timelines(), b.role_timelines())
    for side, timelines in zip((result.a, result.b), roles):
        assert [sum(v) for v in zip(*timelines.values())] == list(side.memory.timeline)
    path = tmp_path / "diff.html"
    write_html(path, diff_page(result, ("accum1", "accum2"), roles))
    opened = Opened(browser, path)
    assert_clean(opened)
    page = opened.page
    assert page.text_content("#causes h2") == result.summary
    rows = page.locator("#causes .cause-table tr")
    assert rows.count() == len(result.causes) + 2  # header and sum
    for n, side in enumerate((result.a, result.b)):
        marker = page.locator(f"#module-{n} .peak-marker")
        assert marker.get_attribute("data-step") == str(side.memory.peak_at["index"])
        marker.hover()
        tip = opened.tooltip()
        assert side.memory.peak_at["instruction"] in tip
        top_role = max(roles[n], key=lambda r: roles[n][r][side.memory.peak_at["index"]])
        assert top_role.replace("_", " ") in tip
        page.mouse.move(0, 0)
    save_screenshot(opened, tmp_path / "diff.png")


@pytest.mark.parametrize("width", [800, 1400])
def test_the_diff_page_says_all_the_text_says(browser, tmp_path, width):
    """`hloscope diff --html` carries what the text diff says (each cause's largest buffers,
    collective instructions, held gathers, the trade), draws A and B on one byte scale, gives
    each buffer its role, keeps the peak's label off the allocation's, and says where it wrote."""
    a, b = (FIXTURES / n / "module.hlo.txt.gz" for n in ("gpu_hsdp_optgrads_accum1", "gpu_hsdp_optgrads_accum2"))
    path = tmp_path / "diff.html"
    run = subprocess.run([sys.executable, "-m", "hloscope", "diff", str(a), str(b), "--html", str(path)],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert run.returncode == 0, run.stderr
    assert f"wrote {path}" in run.stderr
    result = hloscope.diff(hloscope.load(a), hloscope.load(b))
    opened = Opened(browser, path)
    page = opened.page
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_timeout(300)  # the charts redraw for the new width
    assert_clean(opened)
    text = page.inner_text("#causes")
    role_causes = [c for c in result.causes if c.kind == "role" and (c.instructions["a"] or c.instructions["b"])]
    assert page.locator("#largest h3").count() == len(role_causes)
    for c in role_causes:
        for r in c.instructions["a"][:5] + c.instructions["b"][:5]:
            assert r["instruction"] in text
    collectives = result.collectives_delta()
    assert page.locator(".collective-table tr").count() == len(collectives) + 1
    for kind, v in collectives.items():
        row = page.locator(".collective-table tr", has_text=kind).first.inner_text()
        assert f"{v['a']}\t{v['b']}" in row  # counts, not bytes
    assert result.trade_sentence() in text
    assert f"A {len(result.a.gathers.held)} (" in text and f"B {len(result.b.gathers.held)} (" in text
    # One byte scale for both timelines: the higher side's.
    tops = [float(opened.chart(n)["yTop"]) for n in (0, 1)]
    assert tops[0] == tops[1] > max(max(result.a.memory.timeline), max(result.b.memory.timeline))
    # Each buffer at the peak names its role, as the roles analysis has it.
    roles = {r.instruction: r.role for r in result.b.roles.buffers}
    first = page.locator("#module-1 .buf").first
    name = first.locator(".name").inner_text()
    assert first.locator(".role").inner_text().strip() == roles[name].replace("_", " ")
    # The peak's label and the allocation line's label never overlap.
    for n in (0, 1):
        boxes = page.eval_on_selector(f"#module-{n} .chart svg", """s => [".peak-label", ".pack-label"].map(
            c => { const e = s.querySelector(c); if (!e) return null; const b = e.getBBox();
                   return [b.x, b.y, b.width, b.height]; })""")
        if None not in boxes:
            (x1, y1, w1, h1), (x2, y2, w2, h2) = boxes
            assert not (x1 < x2 + w2 and x2 < x1 + w1 and y1 < y2 + h2 and y2 < y1 + h1), boxes
    # The headline wraps between words, never inside an instruction name.
    split = page.eval_on_selector("#causes h2.summary", """h => {
        const node = h.firstChild, out = [];
        for (const m of node.textContent.matchAll(/[A-Za-z0-9_.{},-]*[_.][A-Za-z0-9_.{},-]*/g)) {
          const r = document.createRange();
          r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
          const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
          if (tops.size > 1) out.push(m[0]);
        }
        return out; }""")
    assert split == []
    # The legend names roles, the roles the buffers have.
    legend = page.inner_text("#module-1 .legend")
    assert "unknown" not in legend and "collective" not in legend
    for role in {r.role for r in result.b.roles.buffers if r.where == "temp"}:
        assert role.replace("_", " ") in legend
    save_screenshot(opened, tmp_path / f"diff-{width}.png")
