"""Child process that opens a PDF and prints what it holds as JSON.

It runs apart from the grader (see pdf_report.run_extract_worker) so that a
pathological file (a decompression bomb, a page tree loop, a parser bug that
spins) costs at most the time and memory limits, never the grader itself.
It only reads; interpreting the text as answers happens in report_parser.

Usage: python -m grader.answers.pdf_extract_worker PATH MAX_PAGES
Output: one JSON object on stdout (see extract()).
"""

from __future__ import annotations

import json
import re
import resource
import sys
from collections import Counter

# A heavy but honest report needs far less; past this the file is hostile.
_MEMORY_LIMIT_BYTES = 2 * 1024**3

_BOLD_MARKERS = ("bold", "black", "heavy", "semibold", "cmbx", "-bd", "demi")


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


def _page_lines(page) -> list[dict]:
    """Text lines of a page, top to bottom. Words far apart on a line are
    joined by a tab, so the text fallback can still see table columns in
    PDFs whose tables have no ruling lines."""
    words = page.extract_words(extra_attrs=["size", "fontname"], keep_blank_chars=False, use_text_flow=False)
    words.sort(key=lambda w: ((w["top"] + w["bottom"]) / 2, w["x0"]))
    lines: list[list[dict]] = []
    for word in words:
        middle = (word["top"] + word["bottom"]) / 2
        if lines:
            last = lines[-1]
            last_middle = sum((w["top"] + w["bottom"]) / 2 for w in last) / len(last)
            if abs(middle - last_middle) <= 0.5 * min(word["size"], last[0]["size"]):
                last.append(word)
                continue
        lines.append([word])
    result = []
    height = float(page.height) or 1.0
    for line_words in lines:
        line_words.sort(key=lambda w: w["x0"])
        text = line_words[0]["text"]
        for previous, word in zip(line_words, line_words[1:]):
            gap = word["x0"] - previous["x1"]
            # An ordinary space is about a quarter to a third of the font size;
            # a gap over one em is a column break.
            text += ("\t" if gap > 1.0 * word["size"] else " ") + word["text"]
        top = min(w["top"] for w in line_words)
        bottom = max(w["bottom"] for w in line_words)
        result.append(
            {
                "text": text,
                "size": round(max(w["size"] for w in line_words), 2),
                "bold": all(_is_bold(w["fontname"]) for w in line_words),
                "in_band": top < 0.08 * height or bottom > 0.92 * height,
            }
        )
    return result


_FURNITURE_TEXT = re.compile(
    r"^(?:page\s*)?\d+(?:\s*(?:/|of)\s*\d+)?$|^(?:file|https?)://|^\d{1,2}/\d{1,2}/\d{2,4},?\s+\d{1,2}:\d{2}",
    re.IGNORECASE,
)


def _mark_page_furniture(pages: list[dict]) -> None:
    """Flag running headers/footers (browser print date, URL, "1/2", page
    numbers) as in_margin. A line counts only if it sits in the top or bottom
    band of the page AND looks like furniture: smaller than body text, a page
    number/URL/date, or repeated on several pages. Position alone is not
    enough: a heading can sit just as high when a page break falls before it."""
    body_size = _body_font_size(pages)
    seen_on_pages: Counter = Counter()
    for page in pages:
        for text in {re.sub(r"\d+", "#", line["text"]) for line in page["lines"] if line["in_band"]}:
            seen_on_pages[text] += 1
    for page in pages:
        for line in page["lines"]:
            cells = [cell.strip() for cell in line["text"].split("\t") if cell.strip()]
            line["in_margin"] = line.pop("in_band") and (
                (body_size is not None and line["size"] < 0.9 * body_size)
                or _looks_like_furniture(cells)
                or (not _is_table_row(cells) and seen_on_pages[re.sub(r"\d+", "#", line["text"])] >= 2)
            )


def _is_table_row(cells: list[str]) -> bool:
    # "12  125.61" or "2  182.59 ms  200.4, 200.7": a row of numbers near the page's edge
    # (a table running onto the next page) is content, even though "12" alone reads like a
    # page number and rows look alike once digits are masked.
    return len(cells) >= 2 and all(_NUMBER_CELL.match(cell) for cell in cells)


def _looks_like_furniture(cells: list[str]) -> bool:
    """A page number, URL or print date at either end of the line."""
    if not cells or _is_table_row(cells):
        return False
    return bool(_FURNITURE_TEXT.search(cells[0]) or _FURNITURE_TEXT.search(cells[-1]))


_NUMBER_CELL = re.compile(r"^[\d.,\s]+(?:ms|s|mib|gib|mb|gb)?$", re.IGNORECASE)


def _body_font_size(pages: list[dict]) -> float | None:
    sizes: Counter = Counter()
    for page in pages:
        for line in page["lines"]:
            sizes[line["size"]] += len(line["text"])
    return sizes.most_common(1)[0][0] if sizes else None


def _page_tables(page) -> list[list[list[str]]]:
    """Tables found from ruling lines (pdfplumber's default 'lines' strategy)."""
    tables = []
    for table in page.find_tables():
        # Newlines stay: a table ruled only above and below its body (LaTeX
        # \hline, booktabs) comes back as one row whose cells hold every line.
        rows = [[(cell or "").strip() for cell in row] for row in table.extract()]
        if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
            tables.append(rows)
    return tables


def extract(path: str, max_pages: int) -> dict:
    import pdfplumber

    pages_total, needs_password = _count_pages_and_check_password(path)
    out: dict = {"pages_total": pages_total, "pages_read": 0, "producer": None, "error": None, "pages": []}
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
        producer = metadata.get("Producer") or metadata.get("Creator")
        out["producer"] = producer if isinstance(producer, str) else None
        try:
            for page in pdf.pages:
                out["pages"].append(
                    {
                        "chars": len(page.chars),
                        "images": len(page.images),
                        "lines": _page_lines(page),
                        "tables": _page_tables(page),
                    }
                )
                page.close()  # drop cached layout objects; keeps memory flat on long files
        except Exception as error:
            out["error"] = {"kind": "broken", "detail": f"page {len(out['pages']) + 1}: {type(error).__name__}: {error}"}
    out["pages_read"] = len(out["pages"])
    _mark_page_furniture(out["pages"])
    if out["pages_total"] is None:
        out["pages_total"] = out["pages_read"]
    out["body_font_size"] = _body_font_size(out["pages"])
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
