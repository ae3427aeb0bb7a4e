"""A HW3 report handed in as text (hw3/report.md, report.txt) instead of the PDF the handout
asks for, laid out as the pages the PDF reader's worker gives, so that the rules that read a
PDF's labels, tables and explanations read it alike and nothing else is guessed.

    read_text_report("submission/hw3/report.md", display_name="hw3/report.md") -> Hw3PdfReading

The file is laid out as a person reading it sees it: each line of the file one line of text in
a fixed-width font, its spaces kept (one or two part words, three or more or a tab part cells,
as a wide gap does on a PDF page), a blank line between paragraphs. Markdown's marks are
what they show: a heading (`## Task 1`, or a line underlined with `===`) is set bigger and
bold, a pipe table (with or without its `|---|` line) is a ruled table, an image
(`![...](...)`, `<img>`) is a picture, and emphasis, code marks, links' targets, backslash
escapes, HTML comments, struck-out text (`~~...~~`) and rule lines (`---`) are not part of the
text. A fenced code block is kept as it is. A line longer than WRAP characters wraps at a space,
as a rendered paragraph does. Pages hold about PAGE_LINES lines and break at a blank line
outside a table, so a long file costs what a long PDF does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..sheet import sheet_text

# A text report is a few KiB and a hundred or two lines (the template's is 90); a bigger file
# has more in it than a report (a log pasted in), and is read as far as this: the readers'
# work grows with the lines (about 5 s for MAX_LINES lines of numbers on two shared cores).
MAX_TEXT_BYTES = 256 << 10
MAX_LINES = 600
PAGE_LINES = 60

SIZE = 10.0            # the body text's size (pt)
HEADING_SIZE = 13.0    # a heading's: bigger than 1.12x the body, as the readers tell headings
# A character's width: one or two spaces (0.42 and 0.84 em) stay inside a cell, three or more
# (1.26 em) part cells, as layout.CELL_GAP_EM (0.9 em) decides.
CHAR = 0.42 * SIZE
# Line pitch: lines of a paragraph 0.5 em apart (layout's readers join lines closer than 0.6 em
# into a paragraph or a cell), a blank line between paragraphs 2 em.
PITCH = 1.5 * SIZE
TAB = 8
# A line longer than this is wrapped at a space, as a rendered page wraps a paragraph (and the
# layout's work per line stays that of a PDF's line); a table has at most MAX_CELLS cells a row.
WRAP = 200
MAX_CELLS = 40

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
_RULE = re.compile(r"^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)\s*$")
_FENCE = re.compile(r"^ {0,3}(```+|~~~+)")
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.IGNORECASE)
_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\([^)]*\)")
_TAGS = re.compile(r"</?(?:b|i|u|em|strong|code|span|p|div|sup|sub|small|big|mark|kbd)\b[^>]*>|<br\s*/?>",
                   re.IGNORECASE)
_STRUCK = re.compile(r"~~.+?~~")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_BOLD = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*`])(\*|_)(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*`])")
_CODE = re.compile(r"(`+)(.+?)\1")
# Stand-ins for escaped characters while the marks are read (Unicode's private use area).
_HIDDEN = 0xE000


@dataclass
class _Line:
    """One line of the laid-out text: its characters with whether each is bold, or a table's
    row (`cells`), or a picture."""
    text: list[tuple[str, bool]] = field(default_factory=list)
    size: float = SIZE
    cells: list[list[tuple[str, bool]]] | None = None
    table: int | None = None    # which table of the file the row is in
    picture: bool = False
    blank: bool = False


def read_text_report(path: str | Path, *, display_name: str = "hw3/report.md"):
    """The report's answers, read as a PDF report's are (reader.reading_from_worker_output);
    never raises."""
    from .reader import _unreadable, reading_from_worker_output
    path = Path(path)
    try:
        data = path.read_bytes()[:MAX_TEXT_BYTES + 1]
        kept = data[:MAX_TEXT_BYTES]
        if len(data) > MAX_TEXT_BYTES:   # no UTF-8 character cut in two (the text would read as Windows-1252)
            kept = next((kept[:len(kept) - cut] for cut in range(4) if _utf8(kept[:len(kept) - cut])), kept)
        text = sheet_text(kept)
    except (OSError, UnicodeDecodeError) as error:
        return _unreadable(display_name, f"{{name}} could not be read as text ({type(error).__name__})")
    if not text.strip():
        return _unreadable(display_name, "{name} is empty; hand in the report as hw3/report.pdf")
    try:
        output = worker_output(text)
        if len(data) > MAX_TEXT_BYTES:
            output["truncated"] = f"only its first {MAX_TEXT_BYTES >> 10} KiB were read"
        return reading_from_worker_output(output, display_name)
    except Exception as error:   # "never raises": a bug here must not stop grading
        return _unreadable(display_name, f"{{name}} could not be read: internal error {type(error).__name__}: {error}")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---------------------------------------------------------------- Markdown as it shows


def _hide_escapes(text: str) -> str:
    return _ESCAPED.sub(lambda found: chr(_HIDDEN + ord(found.group(1))), text)


def _shown(text: str, bold: bool = False) -> list[tuple[str, bool]]:
    """A line's text as it shows, each character with whether it is bold."""
    text = _IMAGE.sub("", _TAGS.sub("", text))
    text = _STRUCK.sub("", _LINK.sub(r"\1", text))
    out: list[tuple[str, bool]] = []
    position = 0
    for found in _BOLD.finditer(text):
        out += [(c, bold) for c in _plain(text[position:found.start()])]
        out += [(c, True) for c in _plain(found.group(2))]
        position = found.end()
    out += [(c, bold) for c in _plain(text[position:])]
    return [(chr(ord(c) - _HIDDEN) if _HIDDEN <= ord(c) < _HIDDEN + 128 else c, b) for c, b in out]


def _plain(text: str) -> str:
    text = _CODE.sub(lambda found: found.group(2).strip(), text)
    return _EMPHASIS.sub(r"\2", text)


def _table_cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", body)]


def _is_pipe_row(line: str) -> bool:
    """A line of cells parted by bars ("| 2 | 6.21 |", "2 | 6.21"): two such lines one under the
    other are a table as a person reads the file, whether or not Markdown would draw one."""
    return len(_table_cells(line)) >= 2 and not _FENCE.match(line)


def _layout_lines(text: str) -> list[_Line]:
    """The file's lines as they show (module docstring)."""
    text = re.sub(r"<!--.*?-->", lambda found: "\n" * found.group(0).count("\n"), text, flags=re.S)
    source = [line.expandtabs(TAB).rstrip("\n\r") for line in text.splitlines()]
    out: list[_Line] = []
    fence = None
    tables = 0
    index = 0
    while index < len(source):
        raw = source[index]
        if fence is not None:
            if raw.strip().startswith(fence):
                fence = None
            else:
                out += [_Line(part) for part in _wrapped([(c, False) for c in raw])]
            index += 1
            continue
        opened = _FENCE.match(raw)
        if opened:
            fence = opened.group(1)[:3]
            index += 1
            continue
        if not raw.strip():
            out.append(_Line(blank=True))
            index += 1
            continue
        # A pipe table: a row and its |---| line, or rows that start with a bar without it.
        following = source[index + 1] if index + 1 < len(source) else ""
        ruled = "|" in raw and _DELIMITER_ROW.match(following) and "-" in following
        if ruled or (_is_pipe_row(raw) and _is_pipe_row(following)):
            rows = [raw]
            index += 2 if ruled else 1
            while index < len(source) and source[index].strip() and "|" in source[index]:
                if not _DELIMITER_ROW.match(source[index]):
                    rows.append(source[index])
                index += 1
            for number, row in enumerate(rows):
                cells = [_shown(_hide_escapes(cell), bold=bool(ruled) and number == 0)[:WRAP]
                         for cell in _table_cells(row)[:MAX_CELLS]]
                out.append(_Line(cells=cells, table=tables))
            tables += 1
            continue
        if _SETEXT.match(raw) and out and not out[-1].blank and out[-1].cells is None and not out[-1].picture:
            out[-1].size = HEADING_SIZE   # the line above is a heading, underlined
            out[-1].text = [(c, True) for c, _ in out[-1].text]
            index += 1
            continue
        if _RULE.match(raw) or _SETEXT.match(raw):
            index += 1   # a rule line, or front matter's fence
            continue
        if _IMAGE.search(raw):
            out.append(_Line(picture=True))
        heading = _ATX.match(raw)
        line = re.sub(r"^ {0,3}(?:>\s?)+", "", raw)            # a quote's marks
        line = re.sub(r"(?:\\|\s{2,})$", "", line)              # a hard line break's
        if heading:
            out.append(_Line(_shown(_hide_escapes(heading.group(2) or ""), bold=True)[:WRAP], size=HEADING_SIZE))
        else:
            shown = _shown(_hide_escapes(line))
            if any(c.strip() for c, _ in shown):
                out += [_Line(part) for part in _wrapped(shown)]
            elif not _IMAGE.search(raw):
                out.append(_Line(blank=True))
        index += 1
    return out


def _wrapped(chars: list[tuple[str, bool]]) -> list[list[tuple[str, bool]]]:
    """A line of more than WRAP characters as lines of at most WRAP, broken at a space."""
    parts = []
    while len(chars) > WRAP:
        cut = max((at for at in range(WRAP // 2, WRAP + 1) if not chars[at][0].strip()), default=WRAP)
        parts.append(chars[:cut])
        chars = chars[cut:]
        while chars and not chars[0][0].strip():
            chars = chars[1:]
    return parts + [chars]


# ---------------------------------------------------------------- pages, as the worker gives them


def _pages(lines: list[_Line]) -> list[list[_Line]]:
    """At most PAGE_LINES lines a page, broken at a blank line with no table row on either side
    (a row cut by a page break is the PDF reader's hardest case; a text file has none)."""
    pages, page = [], []
    for number, line in enumerate(lines):
        page.append(line)
        if len(page) >= 3 * PAGE_LINES:   # no blank line to break at: a log, not a report
            pages.append(page)
            page = []
            continue
        if len(page) < PAGE_LINES or not line.blank:
            continue
        after = lines[number + 1] if number + 1 < len(lines) else None
        before = page[-2] if len(page) > 1 else None
        if (before is None or before.cells is None) and (after is None or after.cells is None):
            pages.append(page)
            page = []
    if page:
        pages.append(page)
    return pages


def _words(chars: list[tuple[str, bool]], x: float, top: float, size: float) -> list[list]:
    """[text, x0, x1, top, bottom, size, bold] of each run of characters without a space."""
    words, start = [], None
    for at, (char, _) in enumerate(chars + [(" ", False)]):
        if char.strip() and start is None:
            start = at
        elif not char.strip() and start is not None:
            piece = chars[start:at]
            words.append(["".join(c for c, _ in piece), round(x + start * CHAR, 2), round(x + at * CHAR, 2),
                          round(top, 2), round(top + size, 2), size, int(all(b for _, b in piece))])
            start = None
    return words


def _page(lines: list[_Line]) -> dict:
    height = max(len(lines), 1) * PITCH / 0.8
    margin = 0.1 * height
    words, images, ruled = [], [], {}
    widest = 0.0
    columns: dict[int, list[int]] = {}
    for line in lines:
        if line.cells is not None:
            widths = columns.setdefault(line.table, [])
            for number, cell in enumerate(line.cells):
                if number >= len(widths):
                    widths.append(0)
                widths[number] = max(widths[number], len(cell) + 2)
    for row, line in enumerate(lines):
        top = margin + row * PITCH
        if line.picture:
            images.append([0.0, round(top, 2), 200.0, round(top + 1.3 * SIZE, 2)])
        elif line.cells is not None:
            widths = columns[line.table]
            x, boxes = 0.0, []
            for number, width in enumerate(widths):
                cell = line.cells[number] if number < len(line.cells) else []
                words += _words(cell, x + CHAR, top, SIZE)
                boxes.append([round(x, 2), round(top - 2.5, 2), round(x + width * CHAR, 2), round(top + PITCH - 2.5, 2)])
                x += width * CHAR
            widest = max(widest, x)
            ruled.setdefault(line.table, []).append(boxes)
        elif not line.blank:
            words += _words(line.text, 0.0, top, line.size)
            widest = max(widest, len(line.text) * CHAR * line.size / SIZE)
    tables = [{"bbox": [rows[0][0][0], rows[0][0][1], rows[0][-1][2], rows[-1][0][3]], "rows": rows}
              for rows in ruled.values() if max(len(r) for r in rows) >= 2]
    # Three times the widest line wide: no strip of the page's middle (where layout looks for
    # the gutter of two columns of text) has text on both sides of it.
    return {"width": round(max(595.0, 3 * widest + 100), 2), "height": round(height, 2),
            "chars": sum(len(w[0]) for w in words), "ocr_chars": 0, "words": words,
            "images": images, "ruled": tables, "fonts": []}


def worker_output(text: str) -> dict:
    """What extract_worker.extract gives for a PDF, for the text laid out as it shows."""
    lines = _layout_lines(text)
    pages = _pages(lines[:MAX_LINES])
    return {"pages_total": len(pages), "pages_read": len(pages), "producer": None, "creator": None,
            "error": None, "pages": [_page(page) for page in pages], "text_report": True,
            "truncated": f"only its first {MAX_LINES} lines were read" if len(lines) > MAX_LINES else None}
