"""What a gradebook keeps between batches for the instructor: the overrides it was last scored
with and the Moodle worksheets it was given (an instructor's day: a re-run without them had
dropped every manual score and left a filled worksheet that disagreed with moodle/<a>.csv)."""
from __future__ import annotations

import base64
import tempfile
from pathlib import Path

from grader.batch.gradebook import Gradebook
from grader.batch.moodle_worksheet import Worksheet, WorksheetError, read_worksheet
from grader.batch.progress import Progress


def overrides_kept_or_replaced(book: Gradebook, given: Path | str | None, overrides: dict,
                                progress: Progress) -> dict:
    """The instructor's overrides for this batch. A batch given none keeps those the gradebook
    was last scored with (a re-run to pick up a late upload had dropped every manual score from
    grades.csv, the reports and Moodle's sheets, in silence); a new file replaces them, saying
    whose entries changed or were dropped."""
    kept = book.setting("overrides")
    if kept is None:   # a gradebook from before they were kept: those its results were scored with
        scored = {run.student.key: (run.result or {}).get("overrides")
                  for run in book.current_runs() if run.status == "graded"}
        kept = {"file": None, "entries": {k: v for k, v in scored.items() if v}}
    entries = kept.get("entries") or {}
    if given is None:
        if entries:
            origin = f" ({kept['file']})" if kept.get("file") else ""
            progress.note(f"overrides: none given, so those this gradebook was last scored with"
                          f"{origin} are kept: {len(entries)} student(s)' entries; "
                          "--overrides FILE replaces them")
        return entries
    name = Path(given).name
    if entries:
        changed = sorted(k for k in set(entries) & set(overrides) if entries[k] != overrides[k])
        dropped = sorted(set(entries) - set(overrides))
        added = sorted(set(overrides) - set(entries))
        if changed or added:
            progress.note(f"overrides: {name} replaces those last given; changed for "
                          f"{few(changed)}, new for {few(added)}")
        if dropped:
            progress.warn(f"overrides: {name} has no entry for {few(dropped)}, whose earlier "
                          "overrides are dropped: their manual scores and comments are gone "
                          "from this batch's grades (give the file that has them to keep them)")
    book.keep_setting("overrides", {"file": name, "entries": overrides})
    return overrides


def worksheets_kept(book: Gradebook, given: dict[str, Worksheet], wanted, out: Path,
                     progress: Progress, dry_run: bool = False) -> dict[str, Worksheet]:
    """Each graded assignment's downloaded Moodle worksheet: the one given, kept in the gradebook;
    else the one an earlier batch was given, so that moodle/<a>-worksheet.csv is filled again
    from this batch's grades (left as it was, it had disagreed with a rewritten moodle/<a>.csv);
    where there is none (a gradebook from before they were kept), an older filled worksheet
    is removed, said, never left to be uploaded with grades that are no longer these."""
    found = dict(given)
    for assignment, sheet in given.items():
        try:
            book.keep_setting(f"moodle_worksheet:{assignment}", {
                "name": sheet.source.name,
                "bytes": base64.b64encode(sheet.source.read_bytes()).decode("ascii")})
        except OSError:
            pass
    for assignment in wanted:
        if assignment in found:
            continue
        kept = book.setting(f"moodle_worksheet:{assignment}")
        stale = out / "moodle" / f"{assignment}-worksheet.csv"
        if kept:
            try:
                with tempfile.TemporaryDirectory(prefix="pdl-worksheet-") as folder:
                    path = Path(folder) / Path(str(kept["name"])).name
                    path.write_bytes(base64.b64decode(kept["bytes"]))
                    found[assignment] = read_worksheet(path)
                progress.note(f"moodle/{assignment}-worksheet.csv: filled again from "
                              f"{kept['name']}, the worksheet an earlier batch was given (kept in "
                              f"the gradebook); --moodle-worksheet {assignment}=FILE gives a "
                              "newer one")
                continue
            except (WorksheetError, OSError, ValueError, KeyError, TypeError):
                pass
        if stale.exists():
            if not dry_run:
                stale.unlink()
            progress.warn(f"moodle/{assignment}-worksheet.csv {'would be ' * dry_run}removed: an earlier batch filled it "
                          "from a worksheet this batch was not given, and its grades would no "
                          f"longer be these; --moodle-worksheet {assignment}=FILE writes it again")
    return found


def few(keys: list[str], shown: int = 8) -> str:
    if not keys:
        return "none"
    return ", ".join(keys[:shown]) + (f" and {len(keys) - shown} more" if len(keys) > shown else "")
