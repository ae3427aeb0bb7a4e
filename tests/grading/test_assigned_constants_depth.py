"""A student's script nested past the parser's depth is read as "does not parse", never an
exception in the checks' fixtures (which had made every Practical 5 and 10 check error: a
grading problem, no grade, in every batch, for the student's own file)."""
from grader.checks.practical_measures import assigned_constants


def test_a_script_too_deep_to_parse_assigns_nothing_the_grader_reads():
    for source in ("x = " + "-" * 3000 + "1\n", "x = " + "-" * 200_000 + "1\n"):
        assert assigned_constants("BATCH_SIZE = 64\n" + source, {"BATCH_SIZE"}) == {}
