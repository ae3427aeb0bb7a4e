"""Every file that is not a readable report gets a clear message, the manual
review flag and the full list of missing answers, within the time bound, and
read_hw3_pdf never raises."""

from __future__ import annotations

import time

import pytest

import bad_pdfs
from grader.answers.hw3_pdf import read_hw3_pdf
from grader.answers.hw3_pdf.contract import expected_fields
from report_builders import ToolMissing

TIME_LIMIT_S = 30


def _read(path, **kwargs):
    started = time.monotonic()
    result = read_hw3_pdf(path, **kwargs)
    elapsed = time.monotonic() - started
    assert elapsed < kwargs.get("time_limit_s", TIME_LIMIT_S) + 5, f"took {elapsed:.1f} s"
    return result


def _assert_unreadable(result, message_part):
    assert result.status == "unreadable"
    assert result.needs_manual_review is True
    assert result.answers == {}
    assert result.missing == expected_fields()
    assert len(result.problems) == 1
    assert message_part in result.problems[0], result.problems


def test_plain_report_is_read_without_any_external_tool(tmp_path):
    """The baseline for the bad inputs below: the same content, readable."""
    result = _read(bad_pdfs.plain_report(tmp_path / "report.pdf"))
    assert (result.status, result.missing, result.problems) == ("ok", [], [])
    assert result.producer == "tiny_pdf test writer"
    assert result.answers["task2.step_time_table"][2] == {"depth": 24, "step_time_ms": 47.1}
    assert result.answers["task4.table"][1]["memory_per_gpu_mib"] == [402, 398, 398, 398, 410]
    assert result.answers["task5.transfers_5gpus"] == 4
    assert result.answers["task4.more_gpus_faster"] == {"value": "no", "explanation": ""}
    assert result.answers["task5.transfers_grow_with_gpus"] == {"value": "yes", "explanation": "one more per added GPU."}


def test_missing_file(tmp_path):
    result = _read(tmp_path / "report.pdf")
    assert result.status == "missing"  # "not handed in", not "could not be read"
    assert result.problems == ["hw3/report.pdf was not handed in; hand the report in under that name"]


def test_empty_file(tmp_path):
    (tmp_path / "report.pdf").write_bytes(b"")
    _assert_unreadable(_read(tmp_path / "report.pdf"), "hw3/report.pdf is empty (0 bytes)")


def test_text_file_named_pdf(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_text("\n".join(bad_pdfs.REPORT_LINES), encoding="utf-8")
    _assert_unreadable(_read(path), "hw3/report.pdf is not a PDF but a text file")


def test_docx_renamed_to_pdf(tmp_path):
    path = bad_pdfs.docx_renamed(tmp_path / "report.pdf")
    _assert_unreadable(_read(path), "is not a PDF but a ZIP archive (a .docx or .odt renamed?)")


def test_encrypted_pdf(tmp_path):
    try:
        path = bad_pdfs.encrypted_report(tmp_path / "report.pdf")
    except ToolMissing as missing:
        pytest.skip(str(missing))
    result = _read(path)
    _assert_unreadable(result, "hw3/report.pdf is encrypted; export it again without a password")
    assert result.pages == 0  # not countable without the password


def test_scanned_pdf_has_no_text_layer(tmp_path):
    result = _read(bad_pdfs.scanned_report(tmp_path / "report.pdf"))
    _assert_unreadable(result, "hw3/report.pdf is a scan: its page is a picture with no text; a person must read it")
    assert result.pages == 1


def test_truncated_pdf(tmp_path):
    result = _read(bad_pdfs.truncated_pdf(tmp_path / "report.pdf"))
    assert result.status == "unreadable" and result.needs_manual_review
    assert "hw3/report.pdf" in result.problems[0]


def test_huge_pdf_reads_only_the_first_pages(tmp_path):
    result = _read(bad_pdfs.huge_report(tmp_path / "report.pdf"), max_pages=50)
    assert result.pages == 300
    assert result.problems[0] == "hw3/report.pdf has 300 pages; only the first 50 were read"
    assert result.status == "partial" and result.needs_manual_review
    assert result.missing == []  # the answers on page 1 are still read
    assert result.answers["task1.layers_per_gpu"] == [3, 3]


def test_time_limit_stops_a_slow_read(tmp_path):
    """Reading all 300 dense pages takes several seconds; a 1 s limit must cut it off."""
    path = bad_pdfs.huge_report(tmp_path / "report.pdf", lines_per_page=60)
    started = time.monotonic()
    result = read_hw3_pdf(path, time_limit_s=1, max_pages=300)
    elapsed = time.monotonic() - started
    _assert_unreadable(result, "reading hw3/report.pdf took longer than 1 s")
    assert elapsed < 3, f"the limit was 1 s but the call took {elapsed:.1f} s"


def test_display_name_appears_in_messages(tmp_path):
    result = _read(tmp_path / "nothing.pdf", display_name="hw3/final_report.pdf")
    assert result.problems == ["hw3/final_report.pdf was not handed in; hand the report in under that name"]


def test_never_raises_on_a_directory(tmp_path):
    _assert_unreadable(_read(tmp_path), "hw3/report.pdf is not a file")
