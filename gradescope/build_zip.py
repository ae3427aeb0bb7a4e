"""Build the zip an instructor uploads to Gradescope ("Configure Autograder" -> zip file).

    python gradescope/build_zip.py [--out autograder.zip] [--assignments hw3]

Gradescope wants setup.sh and run_autograder at the zip root and unzips everything to
/autograder/source. We add the grader's own files as git tracks them (no local leftovers,
no build outputs) and leave out reference/ (the solutions), tests/ and benchmarks/: nothing a
submission could read from the image should help it.
"""
from __future__ import annotations

import argparse
import subprocess
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INCLUDED = ("grader", "rubrics", "student_template", "gradescope", "pyproject.toml", "setup.py",
            "README.md")
AT_ROOT = {"gradescope/setup.sh": "setup.sh", "gradescope/run_autograder": "run_autograder"}


def tracked_files(repo: Path = REPO) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--", *INCLUDED], cwd=repo, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    return sorted(path for path in listed if (repo / path).is_file())


def build(out: Path, assignments: str | None = None, repo: Path = REPO) -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in tracked_files(repo):
            _add(archive, repo / path, path)
        for path, name in AT_ROOT.items():
            text = (repo / path).read_text(encoding="utf-8")
            if assignments and name == "run_autograder":
                # The default assignment list baked in, so the uploaded script needs no setup.
                text = text.replace('${PDL_ASSIGNMENTS:-hw3}', f'${{PDL_ASSIGNMENTS:-{assignments}}}')
            _add(archive, repo / path, name, text=text)
    return out


def _add(archive: zipfile.ZipFile, source: Path, name: str, text: str | None = None) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible zips
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o755 if source.stat().st_mode & 0o111 else 0o644) << 16
    archive.writestr(info, text if text is not None else source.read_bytes())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="autograder.zip")
    parser.add_argument("--assignments", default=None,
                        help='assignment(s) graded, space-separated (default in run_autograder: "hw3")')
    options = parser.parse_args()
    print(build(Path(options.out), options.assignments))
