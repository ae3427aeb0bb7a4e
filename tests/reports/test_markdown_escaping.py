"""Markdown is escaped for Markdown, not HTML: `DEPTH < N` reads as written, raw and rendered,
while a student's text brings in no markup (rendered with pandoc's GitHub Markdown)."""
import shutil
import subprocess

import pytest

from grader.reports.render import markdown_inline, render_markdown
from tests.support.report_fixtures import ROUND_ROBIN, find_item, fresh

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<!-- hide -->",
           "[click](http://evil.example)", "![pixel](http://evil.example/p.png)",
           "**loud** _quiet_", "`code`", "&lt;b&gt;", "# Heading", "> quote", "- item",
           "1. item", "a | b", "~~gone~~", "http://evil.example and www.evil.example",
           "<http://evil.example>"]


def gfm_to_html(markdown: str) -> str:
    if shutil.which("pandoc") is None:
        pytest.skip("pandoc is not installed (bash scripts/install.sh --test-tools)")
    return subprocess.run(["pandoc", "-f", "gfm", "-t", "html"], input=markdown,
                          capture_output=True, text=True, check=True).stdout


def test_comparison_signs_read_as_written():
    assert markdown_inline("DEPTH < N") == "DEPTH < N"
    assert markdown_inline("a & b, 5 > 3") == "a & b, 5 > 3"
    assert markdown_inline("27.64") == "27.64" and markdown_inline("memory_per_gpu_mib") == "memory_per_gpu_mib"
    assert "&lt;" not in markdown_inline("DEPTH < N <= 8")


@pytest.mark.parametrize("text", HOSTILE)
def test_student_text_renders_as_the_same_text_and_no_markup(text):
    escaped = markdown_inline(text)
    for markdown in (f"- {escaped}\n", f"| a |\n|---|\n| {escaped} |\n", f"### {escaped}\n"):
        html = gfm_to_html(markdown)
        for tag in ("<script", "<img", "<a ", "<strong", "<em", "<code", "<del", "<blockquote",
                    "<h1", "<ol", "<!--"):
            assert tag not in html, (text, html)
    plain = gfm_to_html(f"{escaped}\n")
    expected = (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    assert expected in plain, (text, plain)


def test_the_report_shows_depth_less_than_n_unescaped():
    result = fresh(ROUND_ROBIN)
    find_item(result, "hw3.task1")["title"] = "Task 1 - layers when DEPTH < N"
    result["assignments"][0]["answers"]["problems"].append("DEPTH < N leaves GPUs idle")
    md = render_markdown(result)
    assert "Task 1 - layers when DEPTH < N" in md and "- DEPTH < N leaves GPUs idle" in md
    assert "&lt;" not in md
    assert "DEPTH &lt; N" in gfm_to_html(md)   # rendered: the text "<", no tag
