#!/usr/bin/env bash
# Rebuild reference/hw3/report.pdf from reference/hw3/REPORT.md the way many students do
# (Markdown -> pandoc HTML -> browser print to PDF). Needs pandoc and chromium
# (`bash scripts/install.sh --test-tools`). tests/answers checks that the PDF and
# reference/hw3/answers.yaml give the same answers.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pandoc --standalone --metadata title="HW3 report" --metadata pagetitle="HW3 report" \
    reference/hw3/REPORT.md -o "$work/report.html"
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer \
    --user-data-dir="$work/profile" --print-to-pdf="$work/report.pdf" "file://$work/report.html" 2>/dev/null
cp "$work/report.pdf" reference/hw3/report.pdf
echo "wrote reference/hw3/report.pdf ($(stat -c %s reference/hw3/report.pdf) bytes)"
