"""Which assignments a batch grades, where the instructor did not say (`--assignment`): those
the uploads hold, per Moodle download; and the uploads a batch told which to grade leaves alone."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from grader.batch.inputs import Submission, UnpackLimits, assignments_and_template_copies_in
from grader.batch.kept_settings import few
from grader.batch.layout import TEMPLATE_UNCHANGED
from grader.batch.progress import Progress
from grader.scoring import assignment_ids


def choose_assignments(found: list[Submission], scratch: Path, rubrics: dict,
                       limits: UnpackLimits = UnpackLimits()
                       ) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """What a batch told no --assignment grades: per export (SUBMISSIONS, or each folder of
    exports side by side), the assignments that more than half of its uploads holding any
    assignment's files hold. Grading every rubric had zero-filled the four assignments a
    Moodle download (always one assignment's) does not hold, Moodle sheets included; an
    assignment a few uploads hold besides (a student's whole course folder) is said and left
    out, never zero-filled for everyone else ("at least half" had graded HW3 for both uploads
    of two, one of them a course folder, with a Moodle sheet of the wrong participant
    numbers). Where none is held by more than half (one upload of each of two), those held by
    the most, said so. An assignment folder that is the template unchanged (a whole course
    folder's untouched assignments: template_copies) holds nothing: said as not handed in,
    and never graded (adv44 F4: 30 gradings for 6 students, 0/12 in Moodle sheets for
    assignments never handed in). Returns ({student key: assignments}, the lines that say what
    was chosen and why)."""
    order = list(rubrics)
    layout = list(dict.fromkeys([*assignment_ids(), *rubrics]))
    exports: dict[str, list[tuple[Submission, set[str]]]] = {}
    copies: dict[str, dict[tuple[str, str], list[str]]] = {}   # {export: {(assignment, why): keys}}
    copies_of: dict[str, dict[str, str]] = {}                    # {student key: its template copies}
    for submission in found:
        held, unchanged = assignments_and_template_copies_in(
            submission, scratch / submission.student.key, layout, limits)
        exports.setdefault(submission.export, []).append(
            (submission, {a for a in held if a in rubrics}))
        for assignment, why in unchanged.items():
            if assignment in rubrics:
                copies.setdefault(submission.export, {}).setdefault((assignment, why), []).append(
                    submission.student.key)
        copies_of[submission.student.key] = unchanged
    chosen_of: dict[str, tuple[str, ...]] = {}
    lines = []
    for export, uploads in sorted(exports.items()):
        holding = [(s, held) for s, held in uploads if held]
        counts = Counter(a for _, held in holding for a in held)
        chosen = tuple(a for a in order if counts[a] and 2 * counts[a] > len(holding))
        where = f"{export}/: " if export else ""
        lines.extend(f"{where}{a}: {why}: not handed in ({few(keys)})"
                     for a in order for (copy, why), keys in copies.get(export, {}).items()
                     if copy == a)
        if not chosen and counts:
            most = max(counts.values())
            chosen = tuple(a for a in order if counts[a] == most)
            lines.append(f"{where}no assignment is in more than half of the {len(holding)} "
                         "uploads holding an assignment's files: graded for those most of them "
                         f"hold, {listed(chosen)} (--assignment chooses)")
        chosen_of[export] = chosen
        if not chosen:
            lines.append(f"{where}none of its {len(uploads)} upload(s) holds files of an "
                         "assignment: each is for a person")
            continue
        lines.append(f"{where}graded: " + ", ".join(
            f"{a} (in {counts[a]} of the {len(holding)} uploads holding an assignment's files)"
            for a in chosen))
        for a in order:
            if counts[a] and a not in chosen:
                keys = [s.student.key for s, held in holding if a in held]
                lines.append(
                    f"{where}not graded: {a}, in only {counts[a]} of them ({', '.join(keys[:5])}"
                    f"{' ...' if len(keys) > 5 else ''}): a Moodle download is one assignment's, "
                    f"so the others would all get 0 for it; --assignment {a} (with the others) "
                    "grades it for everybody")
    if lines:
        lines.insert(0, "assignments: no --assignment given, so those the uploads hold"
                        + (" (per folder: one download each)" if len(exports) > 1 else ""))
    everywhere = tuple(a for a in order if any(a in t for t in chosen_of.values())) or tuple(order)
    return {s.student.key: handed_in(chosen_of[s.export] or everywhere, copies_of[s.student.key])
            for s in found}, lines


def handed_in(chosen: tuple[str, ...], copies: dict[str, str]) -> tuple[str, ...]:
    """`chosen` less the assignments the upload holds as the template unchanged (not handed in:
    never graded 0). Where that leaves none, all of `chosen`: the upload's preparation says
    it is no work (layout.require_work_handed_in) and holds it for a person."""
    return tuple(a for a in chosen if a not in copies) or chosen


def left_alone(found: list[Submission], given: tuple[str, ...], scratch: Path, rubrics: dict,
                limits: UnpackLimits) -> tuple[list[Submission], list[str]]:
    """The uploads a batch told `--assignment` grades, and a line on those it leaves alone:
    an upload holding none of the assignments but another's files (Practical 5's download
    beside HW3's) is not this batch's. `--assignment hw3` had made each of them "needs a
    person", overwritten its Practical 5 result with an HW3 0 and dropped Practical 5 from
    grades.csv. An upload holding nothing of any assignment is graded (for a person) as before."""
    layout = list(dict.fromkeys([*assignment_ids(), *rubrics]))
    kept, alone = [], {}
    for submission in found:
        key = submission.student.key
        held, copies = assignments_and_template_copies_in(submission, scratch / key, layout, limits)
        # A folder of a given assignment changed, yet no work of its own (Practical 5's wrap
        # that Practical 6 runs, which graders before cde90bd graded): for a person, with why,
        # never left alone with that earlier grade.
        changed = any(copies.get(a, TEMPLATE_UNCHANGED) != TEMPLATE_UNCHANGED for a in given)
        if held and not held & set(given) and not changed:
            alone.setdefault(", ".join(a for a in layout if a in held), []).append(key)
        else:
            kept.append(submission)
    if not alone:
        return kept, []
    count = sum(len(keys) for keys in alone.values())
    return kept, [f"--assignment {', '.join(given)}: {count} upload(s) hold none of "
                  f"{'it' if len(given) == 1 else 'them'} but another assignment's files, and are "
                  "left alone (not graded; their earlier results and grades stay as they are): "
                  + "; ".join(f"{what}: {few(keys)}" for what, keys in alone.items())]


def listed(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def warn_moodle_downloads_of_several(found: list[Submission],
                                     graded_by: dict[str, tuple[str, ...]],
                                     progress: Progress) -> None:
    """A Moodle download is one assignment's and numbers its participants for it: graded for
    several, its participant numbers go into each one's Moodle sheet, and are right in one
    of them only (another assignment's "Participant 12" is someone else, or no one)."""
    exports: dict[str, set[str]] = {}
    for submission in found:
        if submission.student.participant_id:
            exports.setdefault(submission.export, set()).update(graded_by[submission.student.key])
    for export, graded in sorted(exports.items()):
        if len(graded) > 1:
            ordered = [a for a in dict.fromkeys(a for t in graded_by.values() for a in t)
                       if a in graded]      # in the order graded (the rubrics')
            what = f"the Moodle download {export}/" if export else "the Moodle download"
            progress.warn(f"{what}'s uploads are graded for {listed(ordered)}, but a Moodle "
                          "download is one assignment's and numbers its participants for it: "
                          + listed(f"moodle/{a}.csv" for a in ordered)
                          + f" {'both' if len(ordered) == 2 else 'all'} hold its participant "
                          "numbers, which are right in the one of the assignment it was "
                          "downloaded from; upload only that one (or grade it with --assignment)")
