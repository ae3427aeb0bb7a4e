"""A minimal PDF writer: pages of text lines in one of the standard fonts (Helvetica, or
Courier for text laid out in fixed-width columns), and horizontal rules drawn under lines.

Lets the tests make PDFs (a 300-page one, a report with no external tool)
without LibreOffice or LaTeX, and keeps the bytes fully under our control.
"""

from __future__ import annotations

from pathlib import Path

PAGE_WIDTH, PAGE_HEIGHT = 595, 842  # A4 in points


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content_stream(lines: list[str], font_size: float, column_pt: float = 160,
                    rules_under: tuple[int, ...] = ()) -> bytes:
    commands = ["BT", f"/F1 {font_size} Tf", f"{1.3 * font_size} TL", f"50 {PAGE_HEIGHT - 60} Td"]
    for line in lines:
        # Tabs are not glyphs in Helvetica: draw each tab-separated cell at its own column.
        cells = line.split("\t")
        if len(cells) == 1:
            commands.append(f"({_escape(line)}) Tj T*")
            continue
        for column, cell in enumerate(cells):
            commands.append(f"({_escape(cell)}) Tj {column_pt if column < len(cells) - 1 else 0} 0 Td")
        commands.append(f"{-column_pt * (len(cells) - 1)} 0 Td T*")  # back to the left margin
    commands.append("ET")
    for index in rules_under:  # a rule drawn (not typed) between line `index` and the next
        y = PAGE_HEIGHT - 60 - 1.3 * font_size * index - 0.35 * font_size
        commands.append(f"0.5 w 48 {y:.2f} m {PAGE_WIDTH - 200} {y:.2f} l S")
    return "\n".join(commands).encode("latin-1")


def write_text_pdf(path: Path, pages: list[list[str]], *, font_size: float = 11, column_pt: float = 160,
                   font: str = "Helvetica", rules_under: dict[int, tuple[int, ...]] | None = None) -> Path:
    """Write `pages` (each a list of text lines) as a PDF at `path`; a tab in a line starts a
    cell `column_pt` further right. `font`: a standard PDF font ("Courier" sets every character
    0.6 em wide, as a plain-text export does). `rules_under`: page index -> indices of the
    lines a horizontal rule is drawn under."""
    objects: list[bytes] = []  # object n is objects[n - 1]
    page_count = len(pages)
    font_id = 3
    first_page_id = 4
    kids = " ".join(f"{first_page_id + 2 * i} 0 R" for i in range(page_count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {page_count} >>".encode())
    objects.append(f"<< /Type /Font /Subtype /Type1 /BaseFont /{font} /Encoding /WinAnsiEncoding >>".encode())
    for index, lines in enumerate(pages):
        content_id = first_page_id + 2 * index + 1
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>".encode()
        )
        stream = _content_stream(lines, font_size, column_pt, (rules_under or {}).get(index, ()))
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Producer (tiny_pdf test writer) >>")
    info_id = len(objects)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\n" % (len(objects) + 1, info_id)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    path.write_bytes(bytes(out))
    return path
