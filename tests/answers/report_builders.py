"""Make report PDFs the way students do: LaTeX, a browser, pandoc, LibreOffice.

Each builder turns one fixture source (fixtures/report.{md,tex,html}) filled
in with one number-formatting variant into a PDF. A tool that is not
installed raises ToolMissing (the test skips with the Debian package to
install); a tool that is there but fails raises, so the test fails.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
TOOL_TIMEOUT_S = 180

# How each variant writes the same measurements. "dot_ms" also puts a unit in
# one cell, "comma_ms" uses decimal commas, "seconds" a "(s)" header.
VARIANTS = {
    "dot_ms": dict(unit="(ms)", t6="12.5", t12="23.75", t24="47.1 ms", g2t="31.2", g5t="18.1",
                   g2m="812.5, 790", g5m="402 / 398 / 398 / 398 / 410"),
    "comma_ms": dict(unit="(ms)", t6="12,5", t12="23,75", t24="47,1", g2t="31,2", g5t="18,1 ms",
                     g2m="812,5; 790", g5m="402 / 398 / 398 / 398 / 410"),
    "seconds": dict(unit="(s)", t6="0.0125", t12="0.02375", t24="0.0471", g2t="0.0312", g5t="0.0181",
                    g2m="812.5 / 790", g5m="402, 398, 398, 398, 410"),
}

EXPECTED_ANSWERS = {
    "task1.layers_per_gpu": [3, 3],
    "task1.transfer_between": [2, 3],
    "task2.step_time_table": [
        {"depth": 6, "step_time_ms": 12.5},
        {"depth": 12, "step_time_ms": 23.75},
        {"depth": 24, "step_time_ms": 47.1},
    ],
    "task2.depth_improves_speed": {"value": "no", "explanation": "every added layer adds sequential work."},
    "task4.table": [
        {"gpus": 2, "step_time_ms": 31.2, "memory_per_gpu_mib": [812.5, 790.0]},
        {"gpus": 5, "step_time_ms": 18.1, "memory_per_gpu_mib": [402.0, 398.0, 398.0, 398.0, 410.0]},
    ],
    "task5.to_calls_2gpus": 6,
    "task5.transfers_2gpus": 1,
    "task5.to_calls_5gpus": 6,
    "task5.transfers_5gpus": 4,
    "task4.all_gpus_utilised": {"value": "yes", "explanation": ""},
    "task4.more_gpus_faster": {"value": "yes", "explanation": ""},
    "task5.transfers_grow_with_gpus": {"value": "yes", "explanation": "one more transfer per added GPU."},
}

# First and last words of each explanation in the fixtures: both must be in
# the extracted text, and the next section's heading must not.
EXPLANATION_ENDS = {
    1: ("With DEPTH=6 split over 2 GPUs", "per forward pass."),
    2: ("The step time grows roughly linearly", "doubles the sequential work."),
    3: ("Twenty layers divide evenly", "as small as possible."),
    4: ("More GPUs lower the memory", "run one after another."),
    5: ("The code calls .to() the same number", "sits on another device."),
}


class ToolMissing(Exception):
    """The named tool is not installed; the message says which package has it."""


def fill(source_name: str, variant: str, **extra: str) -> str:
    text = (FIXTURES / source_name).read_text(encoding="utf-8")
    for key, value in {**VARIANTS[variant], **extra}.items():
        text = text.replace(f"@@{key}@@", value)
    assert "@@" not in text, f"unfilled placeholder in {source_name}"
    return text


def _require(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolMissing(f"{tool} is not installed (Debian package {package})")
    return path


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=TOOL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).decode("utf-8", "replace")[-1500:]
        raise RuntimeError(f"{command[0]} failed with exit code {done.returncode}:\n{tail}")


def latex_pdf(workdir: Path, variant: str, *, ruled: bool) -> Path:
    pdflatex = _require("pdflatex", "texlive-latex-base")
    rules = dict(cols2="|l|r|", cols3="|l|r|l|", rule=r"\hline") if ruled else dict(cols2="lr", cols3="lrl", rule="")
    (workdir / "report.tex").write_text(fill("report.tex", variant, **rules), encoding="utf-8")
    _run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"], workdir)
    return workdir / "report.pdf"


def chromium_pdf(html: Path, out: Path) -> Path:
    """Print to PDF as a student's browser would, print headers and footers included."""
    chromium = _require("chromium", "chromium")
    profile = out.parent / "chromium-profile"  # a fresh profile: no first-run state, no network
    _run(
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}",
            f"--print-to-pdf={out}", html.resolve().as_uri(),
        ],
        out.parent,
    )
    if not out.exists():
        raise RuntimeError("chromium exited 0 but wrote no PDF")
    return out


def html_pdf(workdir: Path, variant: str) -> Path:
    html = workdir / "report.html"
    html.write_text(fill("report.html", variant), encoding="utf-8")
    return chromium_pdf(html, workdir / "report.pdf")


def pandoc_pdf(workdir: Path, variant: str) -> Path:
    """Markdown -> standalone HTML (pandoc) -> PDF (browser print)."""
    pandoc = _require("pandoc", "pandoc")
    _require("chromium", "chromium")
    (workdir / "report.md").write_text(fill("report.md", variant), encoding="utf-8")
    _run([pandoc, "--standalone", "report.md", "-o", "report.html"], workdir)
    return chromium_pdf(workdir / "report.html", workdir / "report.pdf")


def libreoffice_pdf(workdir: Path, variant: str, *, document_format: str) -> Path:
    """HTML -> .docx or .odt (the student's word processor file) -> PDF, all in LibreOffice."""
    soffice = _require("soffice", "libreoffice-writer-nogui")
    (workdir / "report.html").write_text(fill("report.html", variant), encoding="utf-8")
    profile = f"-env:UserInstallation={(workdir / 'lo-profile').as_uri()}"
    target = {"docx": "docx:MS Word 2007 XML", "odt": "odt:writer8"}[document_format]
    base = [soffice, profile, "--headless", "--norestore", "--nolockcheck"]
    _run(base + ["--infilter=HTML (StarWriter)", "--convert-to", target, "report.html"], workdir)
    document = workdir / f"report.{document_format}"
    if not document.exists():
        raise RuntimeError(f"LibreOffice wrote no {document.name}")
    (workdir / "report.html").unlink()  # so the next step reads the word processor file only
    _run(base + ["--convert-to", "pdf", document.name], workdir)
    return workdir / "report.pdf"


# name -> (variant, builder(workdir, variant) -> Path). The name is the test id.
BUILDS = {
    "pdflatex-tabular-no-rules-dot": ("dot_ms", lambda d, v: latex_pdf(d, v, ruled=False)),
    "pdflatex-tabular-no-rules-comma": ("comma_ms", lambda d, v: latex_pdf(d, v, ruled=False)),
    "pdflatex-tabular-ruled-seconds": ("seconds", lambda d, v: latex_pdf(d, v, ruled=True)),
    "chromium-html-dot": ("dot_ms", html_pdf),
    "chromium-html-seconds": ("seconds", html_pdf),
    "pandoc-md-chromium-dot": ("dot_ms", pandoc_pdf),
    "pandoc-md-chromium-comma": ("comma_ms", pandoc_pdf),
    "libreoffice-docx-dot": ("dot_ms", lambda d, v: libreoffice_pdf(d, v, document_format="docx")),
    "libreoffice-odt-comma": ("comma_ms", lambda d, v: libreoffice_pdf(d, v, document_format="odt")),
    "libreoffice-docx-seconds": ("seconds", lambda d, v: libreoffice_pdf(d, v, document_format="docx")),
}
