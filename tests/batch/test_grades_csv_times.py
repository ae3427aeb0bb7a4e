"""grades.csv's submission times and late penalties: one pair of columns per assignment where
a row holds several assignments (each upload has its own time), the plain pair where the CSV
has one assignment (the layout Moodle imports and earlier readers know). Audit F3: one
"Submitted at" per person had shown the Practical 5 time on the HW3 row."""
from __future__ import annotations

from grader.batch.gradebook import CurrentRun
from grader.batch.grades_csv import grades_rows
from grader.batch.inputs import Student

ORDER = ["practical5", "hw3"]


def run(key: str, name: str, assignment: str, score: float, submitted_at: str | None,
        penalty: float | None) -> CurrentRun:
    """A graded upload of one assignment; `penalty` None: no deadline known (no `late`)."""
    items = [{"id": f"{assignment}.task1", "kind": "auto", "score": score - (penalty or 0)}]
    if penalty:
        items.append({"id": f"{assignment}.late_penalty", "kind": "penalty", "score": penalty})
    late = {"days_late": 1 if penalty else 0} if penalty is not None else None
    result = {"assignments": [{"id": assignment, "score": score, "items": items, "late": late}]}
    return CurrentRun(Student(key, name, key.rsplit("_", 1)[-1] if "_" in key else None), "graded", None, key, "c",
                      result, {assignment: score}, submitted_at=submitted_at,
                      assignments=(assignment,))


def as_dicts(table: list[list[str]]) -> list[dict[str, str]]:
    return [dict(zip(table[0], row)) for row in table[1:]]


def test_each_assignment_has_its_own_time_and_penalty_columns():
    table = grades_rows([run("Dan_Saar_1004", "Dan Saar", "hw3", 8.4, "2026-05-02T09:30:00+03:00", -2.1),
                         run("Dan_Saar_2004", "Dan Saar", "practical5", 12, "2026-03-01T10:00:00+02:00", 0.0),
                         run("Mari_1010", "Mari", "hw3", 10.5, None, None)], ORDER)
    assert table[0] == ["Identifier", "Full name", "practical5", "hw3",
                        "practical5 submitted at", "practical5 late penalty",
                        "hw3 submitted at", "hw3 late penalty", "Total", "Status", "Key"], table[0]
    dan, mari = as_dicts(table)
    assert (dan["hw3 submitted at"], dan["hw3 late penalty"]) == ("2026-05-02T09:30:00+03:00", "-2.1")
    assert (dan["practical5 submitted at"], dan["practical5 late penalty"]) == (
        "2026-03-01T10:00:00+02:00", "0")
    assert dan["Total"] == "20.4"
    # Mari handed in no Practical 5 and her HW3 time is unknown: empty, never another's time.
    assert [mari[c] for c in table[0][4:8]] == ["", "", "", ""]


def test_an_assignment_with_no_time_anywhere_gets_no_columns():
    table = grades_rows([run("A_1", "Ann", "hw3", 10, "2026-04-30T20:00:00+03:00", 0.0),
                         run("A_2", "Ann", "practical5", 12, None, None)], ORDER)
    assert table[0] == ["Identifier", "Full name", "practical5", "hw3", "hw3 submitted at",
                        "hw3 late penalty", "Total", "Status", "Key"], table[0]


def test_one_assignment_keeps_the_plain_columns():
    table = grades_rows([run("bob", "bob", "hw3", 8, "2026-05-02T10:00:00+02:00", -2.0),
                         run("carol", "carol", "hw3", 10, None, None)], ORDER)
    assert table == [["Identifier", "Full name", "hw3", "Submitted at", "Late penalty", "Total",
                      "Status", "Key"],
                     ["bob", "bob", "8", "2026-05-02T10:00:00+02:00", "-2", "8",
                      "graded", "bob"],
                     ["carol", "carol", "10", "", "", "10", "graded", "carol"]], table
