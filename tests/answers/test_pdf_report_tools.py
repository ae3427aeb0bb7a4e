"""The same filled-in report, made into PDFs by the tools students use, must
give the same answers: labels, both tables (ms, seconds, decimal commas),
and the five explanations, each cut at the next heading."""

from __future__ import annotations

import re
import time

import pytest

from grader.answers.hw3_pdf import read_hw3_pdf
from report_builders import BUILDS, EXPECTED_ANSWERS, EXPLANATION_ENDS


def _assert_tables_equal(actual, expected):
    assert len(actual) == len(expected), actual
    for got, want in zip(actual, expected):
        assert got.keys() == want.keys(), got
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-9), (key, got)


@pytest.mark.slow  # builds PDFs with LibreOffice, LaTeX and a browser: minutes
@pytest.mark.parametrize("build_name", list(BUILDS))
def test_every_answer_is_read_from_the_tools_pdf(build_name, built_report):
    variant, pdf = built_report(build_name)
    started = time.monotonic()
    result = read_hw3_pdf(pdf)
    elapsed = time.monotonic() - started

    assert result.problems == []
    assert result.missing == []
    assert result.status == "ok"
    assert result.needs_manual_review is False
    assert result.pages >= 1 and result.producer
    for field, expected in EXPECTED_ANSWERS.items():
        if field.endswith("table"):
            _assert_tables_equal(result.answers[field], expected)
        else:
            assert result.answers[field] == expected, field
    assert elapsed < 10, f"reading a 2-page report took {elapsed:.1f} s"


@pytest.mark.slow  # builds PDFs with LibreOffice, LaTeX and a browser: minutes
@pytest.mark.parametrize("build_name", list(BUILDS))
def test_explanations_stop_at_the_next_heading(build_name, built_report):
    _, pdf = built_report(build_name)
    answers = read_hw3_pdf(pdf).answers
    for task, (first_words, last_words) in EXPLANATION_ENDS.items():
        text = " ".join(answers[f"task{task}.explanation"].split())  # line breaks differ per tool
        assert text.startswith(first_words), (task, text)
        assert text.endswith(last_words), (task, text)
        # Nothing from the next section, nor a browser's print header/footer.
        assert not re.search(r"Task \d|Layers per GPU|Number of|\(yes/no\)|file://|\d+/\d+$", text), (task, text)


@pytest.mark.slow
def test_the_ruled_and_unruled_table_paths_are_both_exercised(built_report):
    """Guards the fixtures themselves: if every tool produced ruled tables
    (or none did), one of the two table readers would go untested."""
    from grader.answers.hw3_pdf.extract_worker import extract

    ruled = extract(str(built_report("chromium-html-dot")[1]), 5)
    unruled = extract(str(built_report("pdflatex-tabular-no-rules-dot")[1]), 5)
    assert any(page["ruled"] for page in ruled["pages"])
    assert not any(page["ruled"] for page in unruled["pages"])
