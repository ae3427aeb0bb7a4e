"""Practical 6's comparison table read in the words students write (grader/answers/
aspect_words.py): a red team's honest sheet lost 0.33 points for "By hand (DistributedSampler)",
"Mostly GPU 0" and "Same on every GPU", which a TA reads as the handout's Manual, Imbalanced and
Balanced. A cell still not read waits for a person; a cell saying the wrong word is wrong."""

from __future__ import annotations

import pytest

from grader.answers.aspect_words import words_for
from grader.checks import test_practical6 as p6
from grader.checks.support import AnswerNotRead


@pytest.mark.parametrize("aspect, cell, word", [
    # The red team's sheet (adv41 p6_words).
    ("data split", "By hand (DistributedSampler)", "manual"), ("gpu usage", "Mostly GPU 0", "imbalanced"),
    ("gpu usage", "Same on every GPU", "balanced"),
    # Manual, as students say it.
    ("data split", "Manually", "manual"), ("data split", "we split it ourselves", "manual"),
    ("data split", "by the user", "manual"), ("data split", "explicit", "manual"),
    ("data split", "DistributedSampler", "manual"), ("data split", "I split it myself", "manual"),
    # Automatic.
    ("data split", "Automatically", "automatic"), ("data split", "by DataParallel", "automatic"),
    ("data split", "scatter", "automatic"), ("data split", "done for you", "automatic"),
    # Imbalanced.
    ("gpu usage", "mainly GPU 0", "imbalanced"), ("gpu usage", "GPU 0 holds more", "imbalanced"),
    ("gpu usage", "unbalanced", "imbalanced"), ("gpu usage", "skewed", "imbalanced"),
    ("gpu usage", "memory higher on GPU 0", "imbalanced"), ("gpu usage", "uneven", "imbalanced"),
    # Balanced.
    ("gpu usage", "equal", "balanced"), ("gpu usage", "evenly", "balanced"), ("gpu usage", "similar", "balanced"),
    ("gpu usage", "uniform", "balanced"), ("gpu usage", "all GPUs the same", "balanced"),
    ("gpu usage", "same memory on both GPUs", "balanced"),
    # A "not" turns the word it stands before.
    ("gpu usage", "not balanced", "imbalanced"), ("gpu usage", "not unbalanced", "balanced"),
    ("gpu usage", "GPU 0 is not the bottleneck", "balanced"), ("data split", "not manual", "automatic"),
    ("data split", "not by hand", "automatic"), ("data split", "non-automatic", "manual"),
    ("data split", "without a sampler", "automatic"),
])
def test_a_comparison_cell_in_a_students_words_is_read_as_a_ta_reads_it(aspect, cell, word):
    assert words_for(aspect, cell) == word, (
        f"{cell!r} ({aspect}): expected {word!r}, read {words_for(aspect, cell)!r} "
        "(grader/answers/aspect_words.py _WORDS)")


@pytest.mark.parametrize("aspect, cell", [
    # Both words, another comparison, or a "not" that turns none of the words: never guessed.
    ("data split", "automatic and manual"), ("gpu usage", "Same as DP"), ("gpu usage", "similar to DP"),
    ("gpu usage", "no GPU is idle"), ("gpu usage", "GPU 0 first, then the others"),
    ("gpu usage", "even more on GPU 0"), ("data split", "the user does not split"),
    ("data split", "Imbalanced"),
])
def test_a_cell_that_could_mean_either_word_is_not_read(aspect, cell):
    assert words_for(aspect, cell) is None, f"{cell!r} ({aspect}) read as {words_for(aspect, cell)!r}"


TRUTH = ("imbalanced", "balanced")


def _wait(cells):
    words = tuple(words_for("gpu usage", cell) for cell in cells)
    said = tuple(p6.said_as("gpu usage", cell, word) for cell, word in zip(cells, words))
    p6._unread_cells_wait("gpu usage", cells, words, TRUTH, said, "answers.yaml compare.table")


def test_a_cell_not_read_waits_for_a_person_never_marked_wrong():
    with pytest.raises(AnswerNotRead) as raised:
        _wait(("GPU 0 first, then the others", "Balanced"))
    assert raised.value.unread_answer == "compare.table"
    assert "a person reads the dp cell" in str(raised.value), str(raised.value)


@pytest.mark.parametrize("cells", [
    ("GPU 0 first, then the others", "Imbalanced"),   # the other cell is wrong: the row is wrong
    ("GPU 0 first, then the others", ""),              # an empty cell is no answer
    ("Imbalanced", "Balanced"),                        # every cell read: the comparison decides
])
def test_a_row_with_a_wrong_or_empty_cell_does_not_wait(cells):
    _wait(cells)   # returns: must_agree then marks the row (wrong where a cell is)
