"""Whole Moodle downloads handed to the batch as Moodle gives them, zipped: read as the folders
they are (an instructor's day: a folder of the downloads' zips had been graded as one student
per zip, every participant's hw3.zip left out as a data file)."""
from __future__ import annotations

import dataclasses
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.errors import BatchError
from grader.batch.inputs import (METADATA_NAMES, Submission, UnpackLimits, _is_moodle,
                                 _is_note, moodle_download_participants, shown_name)
from grader.batch.unpack import (JUNK_NAMES, DataInTheWay, LeftOut, NeedsPerson, SkippedLink,
                                 display_name, extract_each, free_name, top_name,
                                 zip_entry_name)

# Where the batch unzips the whole Moodle downloads it is given as zips: inside DIR/work (emptied
# at each batch's start and end; no key starts with "_", so no grading's folder is named so).
DOWNLOADS_FOLDER = "_moodle-downloads"
# What a person's row for a zip of Moodle's folders beside other uploads says (and how such a
# row of an earlier batch is known again: grader/batch/settled_downloads.py).
BESIDE_UPLOADS = "holds only Moodle's submission folders"


def refuse_a_file(path: Path, limits: UnpackLimits) -> None:
    """SUBMISSIONS that is no folder: a whole Moodle download zip passes (the batch unzips it);
    anything else is refused, saying what to do."""
    if not path.exists():
        raise BatchError(f"{path} is not a folder (nothing of that name exists): SUBMISSIONS is "
                         "the folder of the uploads, e.g. Moodle's 'Download all submissions'")
    if moodle_download_participants(path, limits):
        return
    if path.suffix.lower() == ".zip":
        raise BatchError(f"{path} is a .zip file, not a folder, and not a whole Moodle download "
                         "(no folder of Moodle's 'Name_<id>_assignsubmission_file_' in it): "
                         f"SUBMISSIONS is a folder of uploads. Unzip it into a folder (unzip "
                         f"'{path}' -d FOLDER) and give that folder, or, for one student's "
                         "upload, put the zip in a folder of its own and give that folder")
    raise BatchError(f"{path} is not a folder: SUBMISSIONS is the folder of the uploads "
                     "(folders or .zip files, one per student, or Moodle's download)")


@dataclass
class Downloads:
    """What SUBMISSIONS is read as once the whole Moodle downloads in it are unzipped."""
    folder: Path                                   # the folder discover() reads
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # upload -> (why it is not graded as it is, whether a person must look): a participant's
    # folder a download could not unzip, or a zip that may be a download or a student's
    problems: dict[Path, tuple[str, bool]] = field(default_factory=dict)
    # The zips of Moodle's folders listed for a person beside other uploads (BESIDE_UPLOADS):
    # grader/batch/settled_downloads.py drops each once its participants are graded.
    beside: list[Path] = field(default_factory=list)
    # upload -> the symbolic links its participant's folder held in the download, skipped
    # (never written): said in the student's report as a folder upload's are.
    links: dict[Path, list[SkippedLink]] = field(default_factory=dict)
    # upload -> why its participant's folder was over the limits and what was left out to
    # grade it (its data: grader/batch/unpack.py `unpacked_leaving_out_data`), said in its
    # report as a folder upload's are.
    left_out: dict[Path, tuple[DataInTheWay, list[LeftOut]]] = field(default_factory=dict)


def moodle_downloads(submissions: Path, out: Path, limits: UnpackLimits) -> Downloads:
    """A whole Moodle download handed in as Moodle gives it (the zip of every participant's
    folder) is read as the folder it is: unzipped into DIR/work/_moodle-downloads/<its name>/,
    each participant an upload of its own, as if the instructor had unzipped it. Left zipped,
    it had been graded as one student named after the zip, whose every participant's hw3.zip
    was left out as a data file.

    A zip named as Moodle names one participant's file (`Jane Doe_123_assignsubmission_file_
    work.zip`, the flat layout) is that participant's upload, whatever it holds: a student who
    zipped the folder Moodle had given her had been taken for a download and left out of every
    record. Beside other uploads, any other zip holding only Moodle's folders may be a download
    or a student's own: it is listed for a person, with what to do, never graded and never
    left out unsaid (it had been only a console line, the student on no list)."""
    if not submissions.is_dir():
        zips = [submissions]
        others: list[Path] = []
        counts = {submissions: moodle_download_participants(submissions, limits)}
    else:
        entries = [entry for entry in sorted(submissions.iterdir())
                   if not entry.name.startswith(".") and entry.name not in JUNK_NAMES]
        # Each zip's directory read once here: how many participants, if a whole download.
        counts = {entry: 0 if _is_moodle(entry) else moodle_download_participants(entry, limits)
                  for entry in entries}
        zips = [entry for entry in entries if counts[entry]]
        others = [entry for entry in entries if entry not in zips and not _is_note(entry)
                  and entry.name not in METADATA_NAMES]
    if not zips:
        return Downloads(submissions)
    if others:
        found = Downloads(submissions)
        for z in zips:
            said = (f"{shown_name(z.name)} {BESIDE_UPLOADS} ({counts[z]} "
                    f"participant{'s' if counts[z] > 1 else ''}), beside other uploads in "
                    f"{shown_name(submissions.name)}/: a whole Moodle download or a student's "
                    "zip of one, not graded as either. A whole download: unzip it into a folder "
                    f"of its own (unzip '{z.name}' -d FOLDER) and grade that folder, or put it "
                    "alone (or with the other downloads' zips) in a folder; a student's upload: "
                    "grade it by hand")
            found.problems[z] = (said, True)
            found.warnings.append(said)
            found.beside.append(z)
        return found
    target = out / "work" / DOWNLOADS_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    found = Downloads(target)
    for archive in zips:
        participants = participant_names(archive)
        stem = shown_name(archive.name[:-4].strip()) or "download"
        place = free_name(target / stem.replace("/", "_"))
        # Each participant's upload unzipped on its own, within one upload's limits: what one
        # of them uploaded (a name of 268 bytes, folders 40 deep) is that upload's problem, as
        # it is where the instructor unzipped the download; a red team's one long name had
        # stopped the whole batch. One folder deeper than an upload: the participant's own.
        within = dataclasses.replace(limits, max_depth=limits.max_depth + 1)
        links: dict[str, list[SkippedLink]] = {}
        left_out: dict[str, tuple[DataInTheWay, list[LeftOut]]] = {}
        refused = extract_each(archive, place, within, participants, links, left_out)
        found.links.update((place / name, skipped) for name, skipped in links.items())
        found.left_out.update((place / name, why) for name, why in left_out.items())
        for name in left_out:
            # Nothing left of it (Moodle's flat layout, its one file a checkpoint): an empty
            # folder in its place, as for a refused one, so that the participant stays in the
            # record, for a person, with what was left out said.
            if not (place / name).exists():
                (place / name).mkdir(parents=True)
        for name, problem in refused.items():
            shutil.rmtree(place / name, ignore_errors=True)
            (place / name).mkdir(parents=True, exist_ok=True)
            said = str(problem).removeprefix(f"{display_name(archive)}: ")
            found.problems[place / name] = (
                f"{shown_name(name)}/ in {shown_name(archive.name)}: {said}",
                isinstance(problem, NeedsPerson))
        found.notes.append(f"{shown_name(archive.name)} is a whole Moodle download: unzipped into "
                           f"{place.relative_to(out).as_posix()}/ (removed when the batch ends) "
                           f"and each of its {counts[archive]} "
                           "participants graded as an upload, as if it had been unzipped into a "
                           "folder")
    return found


def participant_names(archive: Path) -> list[str]:
    """The top-level names of a whole Moodle download (its participants' folders, or their
    files in the flat layout). A download whose own directory cannot be read is no one
    student's problem: the batch stops, saying how to go on."""
    try:
        with zipfile.ZipFile(archive) as zf:
            names = {top_name(zip_entry_name(info)) for info in zf.infolist()}
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as problem:
        raise BatchError(f"{archive}: a whole Moodle download that cannot be read ({problem}); "
                         "unzip it by hand into a folder and grade that folder") from None
    return sorted(names - {"", *JUNK_NAMES})


def with_download_problems(found: list[Submission], downloads: Downloads) -> None:
    """Each upload a whole download could not unzip carries why (a zero, or a person's where
    the file is damaged rather than refused), as a zip of its own would, and the links the
    unzipping skipped, as a folder's would be said."""
    for submission in found:
        for source in submission.sources:
            if source in downloads.problems:
                submission.problem, submission.problem_needs_person = downloads.problems[source]
            submission.skipped_links.extend(downloads.links.get(source, []))
            if source in downloads.left_out:
                submission.left_out_why, items = downloads.left_out[source]
                submission.left_out.extend(items)
