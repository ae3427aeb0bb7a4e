"""HW3's yes/no verdicts from measurements, and yes/no answers as students write them."""
import pytest

from grader.checks.hw3_facts import accepted, change, direction, faster, yes_no


@pytest.mark.parametrize("before,after,verdict", [
    (100, 400, {False}),        # DEPTH 6 -> 24: four times slower
    (182.6, 199.2, {False}),    # 2 -> 5 GPUs, naive model parallelism: a little slower
    (100, 95, {False}),         # under 10% faster: not faster, read honestly
    (100, 80, {True, False}),   # 25% faster: too close to call on other hardware
    (100, 50, {True}),          # twice as fast
])
def test_faster_is_the_set_of_answers_the_medians_support(before, after, verdict):
    assert faster(before, after) == verdict


def test_accepted_answers_in_words():
    assert accepted(frozenset({True, False})) == "yes or no"
    assert accepted(frozenset({False})) == "no"


@pytest.mark.parametrize("before,after,expected", [
    (10, 4, "down"), (10, 10, None), (10, 10.5, None), (4, 10, "up")])
def test_change_is_clear_beyond_ten_percent(before, after, expected):
    assert change(before, after) == expected


def test_direction_reads_reported_numbers_literally():
    assert (direction(1, 2), direction(2, 1), direction(2, 2)) == ("up", "down", "same")


@pytest.mark.parametrize("written,value", [
    (True, True), (False, False), ("yes", True), ("No.", False), (" YES ", True),
    ("jah", True), ("ei", False), ("maybe", None), (1, None), (None, None),
    # the PDF reader's yes/no: the word first, the rest of the line kept beside it
    ({"value": "no", "explanation": "each layer adds work"}, False), ({"value": None}, None)])
def test_yes_no_as_students_write_it(written, value):
    assert yes_no(written) == value
