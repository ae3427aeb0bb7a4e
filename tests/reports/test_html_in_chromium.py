"""The HTML report in headless Chromium: loads without console errors, the plots are laid out
with a real size, and the page is not blank."""
from __future__ import annotations

import io
import json

import pytest

from tests.support.chromium_pipe import CHROMIUM, Chromium
from tests.support.report_fixtures import ROUND_ROBIN, with_hostile_feedback
from grader.reports import render_html

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason=f"{CHROMIUM} is not installed (CI installs it: "
                                       "scripts/install.sh --test-tools)")

SVG_BOXES = """JSON.stringify([...document.querySelectorAll("svg.plot")].map(svg => {
  const box = svg.getBoundingClientRect();
  const style = getComputedStyle(svg);
  return {width: box.width, height: box.height, visible: style.visibility === "visible"
          && style.display !== "none", title: svg.querySelector("title").textContent};
}))"""


@pytest.fixture
def browser(tmp_path):
    profile = tmp_path / "profile"   # a fresh profile: nothing cached from other runs
    chromium = Chromium(profile)
    yield chromium
    chromium.close()


def load(browser, tmp_path, html: str, name: str = "report.html") -> str:
    page = tmp_path / name
    page.write_text(html, encoding="utf-8")
    session = browser.open_page(page.as_uri())
    browser.settle()   # late console/CSP messages are in before anyone asserts on them
    return session


def pixel_stddev(png: bytes) -> float:
    from PIL import Image, ImageStat
    image = Image.open(io.BytesIO(png)).convert("L")
    return ImageStat.Stat(image).stddev[0]


def test_report_loads_cleanly_with_visible_plots(browser, tmp_path, result):
    session = load(browser, tmp_path, render_html(with_hostile_feedback(result(ROUND_ROBIN))))
    assert browser.console_errors() == []
    # The escaped payload is text on the page, not a script that ran.
    assert browser.evaluate("document.querySelectorAll('script').length", session) == 0
    assert "<script>alert(1)</script>" in browser.evaluate("document.body.innerText", session)
    boxes = json.loads(browser.evaluate(SVG_BOXES, session))
    assert [b["title"] for b in boxes] == ["Task 2: step time vs DEPTH (2 GPUs)",
                                           "Task 4: peak memory per GPU (DEPTH=20)"]
    for box in boxes:
        assert box["visible"] and box["width"] > 100 and box["height"] > 100, box
    assert browser.evaluate("document.getElementById('total').textContent", session) == "Total: 16 / 24"
    assert pixel_stddev(browser.screenshot(session)) > 10


def test_the_checks_can_fail(browser, tmp_path):
    """Negative controls: a blank page and a page with a blocked script are caught."""
    session = load(browser, tmp_path, "<!DOCTYPE html><html><body></body></html>", "blank.html")
    assert pixel_stddev(browser.screenshot(session)) < 1
    assert json.loads(browser.evaluate(SVG_BOXES, session)) == []
    csp = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'">')
    load(browser, tmp_path, f"<!DOCTYPE html><html><head>{csp}</head><body>"
         "<script>console.log(1)</script></body></html>", "script.html")
    assert any("Content Security Policy" in error for error in browser.console_errors())
