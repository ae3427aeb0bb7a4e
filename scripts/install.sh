#!/usr/bin/env bash
# Install pdl-autograder on a fresh Debian/Ubuntu machine (no GPU needed).
#   bash scripts/install.sh               what grading needs (bubblewrap sandbox, Python packages)
#   bash scripts/install.sh --test-tools  also the tools the test suite builds PDFs with
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(bubblewrap)
if [[ "${1:-}" == "--test-tools" ]]; then
  # LibreOffice, LaTeX, a browser and a Markdown converter: the tools students write reports with.
  packages+=(libreoffice-writer-nogui texlive-latex-base chromium pandoc qpdf fonts-dejavu-core)
  # Only to rebuild tests/answers/fixtures/reports (build_fixture_reports.py, run by hand):
  # booktabs/fancyhdr, pandoc's LaTeX fonts, a scan (pdftoppm, img2pdf) and OCR.
  packages+=(texlive-latex-recommended lmodern poppler-utils img2pdf ocrmypdf tesseract-ocr-eng)
  # A real single-node SLURM cluster, started and stopped by the cluster tests themselves.
  packages+=(slurm-wlm munge)
fi
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [[ "$(id -u)" != 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null
else
  echo "install.sh: no apt-get here; install ${packages[*]} with your package manager" >&2
fi

# Pin torch first: on these machines 2.13.0 is the CPU build pip finds; a looser requirement
# would pull a multi-GB CUDA build. On a GPU node the same pin gives the CUDA build.
python3 -m pip install -q "torch==2.13.0"
# What students' code may import beside torch (README: "what your code may import").
python3 -m pip install -q numpy
python3 -m pip install -q -e .
if [[ "${1:-}" == "--test-tools" ]]; then
  python3 -m pip install -q python-docx weasyprint  # the fixture reports' Word and WeasyPrint PDFs
  # The suite runs two test files at a time (README, Tests): many slow tests wait on time budgets.
  python3 -m pip install -q "pytest-xdist>=3.5"
fi
