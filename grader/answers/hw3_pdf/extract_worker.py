"""Child process that opens a student's HW3 PDF and prints what is on its pages as JSON.

It runs apart from the grader (see reader.run_extract_worker) so that a pathological file
(a decompression bomb, a page tree loop, a parser bug that spins) costs at most the time and
memory limits, never the grader itself. It only reads geometry: words with their boxes,
pictures, and the cells of tables drawn with ruling lines. Turning that into answers happens
in the grader process (layout.py and the readers after it), on plain data that tests can
also build by hand.

Usage: python -m grader.answers.hw3_pdf.extract_worker PATH MAX_PAGES
Output: one JSON object on stdout (see extract()).
"""

from __future__ import annotations

import json
import resource
import sys

# A heavy but honest report needs far less; past this the file is hostile.
_MEMORY_LIMIT_BYTES = 2 * 1024**3
# A page of a report holds a few hundred words; a page with more is a pasted log or a bomb,
# and the first ones are enough to read it.
_MAX_WORDS_PER_PAGE = 6000
_MAX_TABLES_PER_PAGE = 40

_BOLD_MARKERS = ("bold", "black", "heavy", "semibold", "cmbx", "-bd", "demi")
# Fonts that OCR programs lay invisible text in (tesseract, ocrmypdf, ABBYY's and Adobe's
# "recognise text" use their own; these are the common ones).
_OCR_FONT_MARKERS = ("glyphless", "ocr")


def _count_pages_and_check_password(path: str) -> tuple[int | None, bool]:
    """(page count, needs a password) from pdfium, which counts a 300-page
    file without parsing every page, and tells a password error apart."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as error:
        return None, "password" in str(error).lower()
    try:
        return len(document), False
    finally:
        document.close()


def _is_bold(fontname: str) -> bool:
    name = fontname.lower()
    return any(marker in name for marker in _BOLD_MARKERS)


def _r(value) -> float:
    return round(float(value), 2)


def _words(page) -> list[list]:
    """[text, x0, x1, top, bottom, size, bold] per word. Words are split where the font
    changes (a bold label, a math-mode decimal point); layout.py joins pieces that touch."""
    # x_tolerance 1.5 pt, not pdfplumber's 3: LaTeX sets no space characters and squeezes
    # the gaps between words of a tight line to about 2 pt.
    words = page.extract_words(x_tolerance=1.5, extra_attrs=["size", "fontname"], keep_blank_chars=False,
                               use_text_flow=False)
    return [[w["text"], _r(w["x0"]), _r(w["x1"]), _r(w["top"]), _r(w["bottom"]), _r(w["size"]),
             int(_is_bold(w["fontname"]))] for w in words[:_MAX_WORDS_PER_PAGE] if w.get("upright", True)]


def _ruled_tables(page) -> list[dict]:
    """Tables drawn with ruling lines (pdfplumber's 'lines' strategy): each row's cell boxes.
    A table ruled only above and below its body (LaTeX booktabs) comes back with rows that
    hold several text lines per cell; layout.py splits those again."""
    tables = []
    for table in page.find_tables()[:_MAX_TABLES_PER_PAGE]:
        rows = [[[_r(v) for v in cell] if cell else None for cell in row.cells] for row in table.rows]
        if rows and max(len(r) for r in rows) >= 2:
            tables.append({"bbox": [_r(v) for v in table.bbox], "rows": rows})
    return tables


def _page(page) -> dict:
    fonts = {char["fontname"] for char in page.chars[:20000]}
    return {
        "width": _r(page.width),
        "height": _r(page.height),
        "chars": len(page.chars),
        "ocr_chars": sum(1 for c in page.chars if any(m in c["fontname"].lower() for m in _OCR_FONT_MARKERS)),
        "words": _words(page),
        "images": [[_r(i["x0"]), _r(i["top"]), _r(i["x1"]), _r(i["bottom"])] for i in page.images[:200]],
        "ruled": _ruled_tables(page),
        "fonts": sorted(fonts)[:50],
    }


def extract(path: str, max_pages: int) -> dict:
    import pdfplumber

    pages_total, needs_password = _count_pages_and_check_password(path)
    out: dict = {"pages_total": pages_total, "pages_read": 0, "producer": None, "creator": None,
                 "error": None, "pages": []}
    if needs_password:
        out["error"] = {"kind": "encrypted", "detail": "the PDF needs a password to open"}
        return out
    pages_to_read = list(range(1, min(pages_total or max_pages, max_pages) + 1))
    try:
        pdf = pdfplumber.open(path, pages=pages_to_read)
    except Exception as error:  # pdfminer raises many unrelated types for broken files
        kind = "encrypted" if "password" in type(error).__name__.lower() + str(error).lower() else "broken"
        out["error"] = {"kind": kind, "detail": f"{type(error).__name__}: {error}"}
        return out
    with pdf:
        metadata = pdf.metadata or {}
        for key in ("Producer", "Creator"):
            value = metadata.get(key)
            out[key.lower()] = value if isinstance(value, str) else None
        try:
            for page in pdf.pages:
                out["pages"].append(_page(page))
                page.close()  # drop cached layout objects; keeps memory flat on long files
        except Exception as error:
            out["error"] = {"kind": "broken", "detail": f"page {len(out['pages']) + 1}: {type(error).__name__}: {error}"}
    out["pages_read"] = len(out["pages"])
    if out["pages_total"] is None:
        out["pages_total"] = out["pages_read"]
    return out


def main(argv: list[str]) -> int:
    path, max_pages = argv[1], int(argv[2])
    try:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT_BYTES, _MEMORY_LIMIT_BYTES))
    except (ValueError, OSError):
        pass  # some sandboxes forbid it; the parent's timeout still bounds us
    result = extract(path, max_pages)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
