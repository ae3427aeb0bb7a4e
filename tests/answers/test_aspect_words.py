"""Practical 6's comparison table read in the words students write (grader/answers/
aspect_words.py): a red team's honest sheet lost 0.33 points for "By hand (DistributedSampler)",
"Mostly GPU 0" and "Same on every GPU", which a TA reads as the handout's Manual, Imbalanced and
Balanced. A cell still not read waits for a person; a cell saying the wrong word is wrong."""

from __future__ import annotations

import pytest

from grader.answers.aspect_words import words_for
from grader.checks import test_practical6 as p6
from grader.checks.support import AnswerNotRead


READ_IN_OWN_WORDS = [
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
]


@pytest.mark.parametrize("aspect, cell, word", READ_IN_OWN_WORDS)
def test_a_comparison_cell_in_a_students_words_is_read_as_a_ta_reads_it(aspect, cell, word):
    assert words_for(aspect, cell) == word, (
        f"{cell!r} ({aspect}): expected {word!r}, read {words_for(aspect, cell)!r} "
        "(grader/answers/aspect_words.py _WORDS)")


NOT_READ = [
    # Both words, another comparison, or a "not" that turns none of the words: never guessed.
    ("data split", "automatic and manual"), ("gpu usage", "Same as DP"), ("gpu usage", "similar to DP"),
    ("gpu usage", "no GPU is idle"), ("gpu usage", "GPU 0 first, then the others"),
    ("gpu usage", "even more on GPU 0"), ("data split", "the user does not split"),
    ("data split", "Imbalanced"),
]


@pytest.mark.parametrize("aspect, cell", NOT_READ)
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


# -- a cell that names both methods, read for its column -----------------------------------------
# Students write the comparison in the cell: "automatic for DP, manual for DDP" in the DDP column
# was read as automatic (its head) and marked wrong; "DP: automatic / DDP: manual" waited for a
# person. A TA reads the clause about the column's method: the other method's clause is no part
# of this cell's answer (a bracket or a "where ..." after a clause is about what that clause named).
DDP_COLUMN = [
    ("data split", "automatic for DP, manual for DDP", "manual"),
    ("data split", "DP: automatic / DDP: manual", "manual"),
    ("data split", "unlike DP (automatic), manual", "manual"),
    ("data split", "automatic in DP but manual in DDP", "manual"),
    ("data split", "Manual, whereas DataParallel splits it automatically", "manual"),
    ("data split", "manual (DP does it automatically)", "manual"),
    ("data split", "DP scatters automatically; DDP needs a DistributedSampler", "manual"),
    ("data split", "nn.DataParallel: auto | DDP: by hand", "manual"),
    ("data split", "manual - DP does it for you", "manual"),
    ("data split", "Manual, compared to automatic in DP", "manual"),
    ("gpu usage", "imbalanced in DP, balanced in DDP", "balanced"),
    ("gpu usage", "DP: imbalanced / DDP: balanced", "balanced"),
    ("gpu usage", "balanced (DP: mostly GPU 0)", "balanced"),
    ("gpu usage", "more balanced than DP", "balanced"),
    ("gpu usage", "Balanced, unlike DataParallel where GPU 0 is the bottleneck", "balanced"),
    ("gpu usage", "DP: GPU 0 does more, DDP: same on every GPU", "balanced"),
    ("gpu usage", "DDP balanced while DP is skewed towards GPU 0", "balanced"),
    ("gpu usage", "DP and DDP both balanced", "balanced"),
    ("processes", "1 for DP, multiple for DDP", "multiple"),
    ("processes", "DP: 1, DDP: 2", "multiple"),
    ("processes", "one per GPU (DP has a single process)", "multiple"),
    ("processes", "DataParallel 1 vs DDP multiple", "multiple"),
]
DP_COLUMN = [
    ("data split", "automatic (DDP needs a sampler)", "automatic"),
    ("data split", "automatic for DP, manual for DDP", "automatic"),
    ("data split", "DP: automatic / DDP: manual", "automatic"),
    ("data split", "automatic, unlike DDP (manual)", "automatic"),
    ("data split", "Automatic, whereas in DDP we split it ourselves", "automatic"),
    ("data split", "scatter (DDP: DistributedSampler)", "automatic"),
    ("data split", "automatically - DDP needs a DistributedSampler", "automatic"),
    ("data split", "automatic in DP but manual in DDP", "automatic"),
    ("gpu usage", "imbalanced in DP, balanced in DDP", "imbalanced"),
    ("gpu usage", "DP: imbalanced / DDP: balanced", "imbalanced"),
    ("gpu usage", "mostly GPU 0 (DDP: same on every GPU)", "imbalanced"),
    ("gpu usage", "imbalanced, unlike DDP where it is balanced", "imbalanced"),
    ("gpu usage", "Unbalanced; DDP is even", "imbalanced"),
    ("gpu usage", "imbalanced in DP (GPU 0 does most), balanced in DDP", "imbalanced"),
    ("gpu usage", "DDP balanced, DP imbalanced", "imbalanced"),
    ("processes", "1 (DDP: one per GPU)", "1"),
    ("processes", "1 for DP, multiple for DDP", "1"),
    ("processes", "single process, DDP uses one per GPU", "1"),
    ("processes", "DP: 1, DDP: 2", "1"),
]


@pytest.mark.parametrize("method, aspect, cell, word",
                         [("ddp", *row) for row in DDP_COLUMN] + [("dp", *row) for row in DP_COLUMN])
def test_a_cell_naming_both_methods_is_read_for_its_columns_method(method, aspect, cell, word):
    assert words_for(aspect, cell, method) == word, (
        f"{cell!r} in the {method} column ({aspect}): expected {word!r}, read "
        f"{words_for(aspect, cell, method)!r} (grader/answers/aspect_words.py _about, _clauses)")


@pytest.mark.parametrize("method, aspect, cell", [
    # The column's own clauses disagree, or only the other method is written about: a person reads it.
    ("ddp", "data split", "automatic and manual for DDP"), ("ddp", "data split", "DDP: manual, but also automatic"),
    ("ddp", "gpu usage", "balanced in DDP, imbalanced in DDP"), ("ddp", "gpu usage", "balanced in DDP (GPU 0 does more)"),
    ("dp", "gpu usage", "balanced in DP (GPU 0 does more)"), ("ddp", "data split", "automatic for DP"),
    ("dp", "data split", "manual for DDP"), ("ddp", "gpu usage", "Same as DP"),
])
def test_a_cell_whose_clauses_about_its_column_disagree_is_not_read(method, aspect, cell):
    assert words_for(aspect, cell, method) is None, (
        f"{cell!r} in the {method} column read as {words_for(aspect, cell, method)!r}")


# Every phrasing pinned above reads the same in either column; the one exception is a DDP
# cell's remark about DP read in the DP column (below).
_PINNED = [(aspect, cell) for aspect, cell, _ in READ_IN_OWN_WORDS] + NOT_READ


@pytest.mark.parametrize("method", ["dp", "ddp"])
@pytest.mark.parametrize("aspect, cell", _PINNED)
def test_a_pinned_phrasing_reads_the_same_in_its_column(method, aspect, cell):
    assert words_for(aspect, cell, method) == words_for(aspect, cell), (
        f"{cell!r} ({aspect}) in the {method} column: {words_for(aspect, cell, method)!r}, "
        f"without a column {words_for(aspect, cell)!r}")


def test_a_ddp_cells_remark_about_dp_in_the_dp_column_is_for_a_person():
    cell = "Balanced (unlike DP where GPU 0 is the bottleneck)"
    assert words_for("gpu usage", cell, "ddp") == "balanced"
    assert words_for("gpu usage", cell, "dp") is None   # "balanced" vs its own DP clause


# -- a comparative: one method's GPU usage against the other's (eng_words3) ----------------------
# Students fill the usage row by comparing. "less even than DDP" in DP's column was read by its
# adjective, balanced, and a right answer marked wrong; "worse than DDP" waited for a person. With
# two methods and two words a TA reads the less even one as imbalanced and the more even one as
# balanced, whichever method the sentence names first.
COMPARATIVE_DP_COLUMN = [
    "less even than DDP", "less balanced than DDP", "less evenly than DDP", "worse than DDP",
    "worse balanced than DistributedDataParallel", "more uneven than DDP", "more imbalanced than DDP",
    "more skewed than with DDP", "less uniform than DDP", "much less balanced than DDP",
    "even less balanced than DDP", "not as balanced as DDP", "isn't as even as DDP",
    "not nearly as balanced as in DDP", "DP is less even than DDP", "uses the GPUs less evenly than DDP",
    "less evenly distributed across the GPUs than with DDP", "less even than DDP (GPU 0 gathers the outputs)",
    "imbalanced (less even than DDP)", "less balanced", "worse",
    "DP: less even than DDP / DDP: more even than DP",
]
COMPARATIVE_DDP_COLUMN = [
    "more even than DP", "more balanced than DP", "uses GPUs more evenly than DataParallel",
    "better than DP", "better balanced than nn.DataParallel", "less uneven than DP", "less imbalanced than DP",
    "less skewed than DP", "more uniform than DataParallel", "much more balanced than DP",
    "far more evenly spread out than with DP", "more equal than DP's", "DP is less even than DDP",
    "DP isn't as balanced as DDP", "the GPUs are more evenly used than in DP", "more evenly distributed than DP",
    "balanced (more even than DP)", "more balanced than DP, GPU 0 is not the bottleneck", "more balanced",
    "better", "DP: less even than DDP / DDP: more even than DP",
]


@pytest.mark.parametrize("method, cell, word", [("dp", cell, "imbalanced") for cell in COMPARATIVE_DP_COLUMN]
                         + [("ddp", cell, "balanced") for cell in COMPARATIVE_DDP_COLUMN])
def test_a_comparative_is_read_as_the_word_it_makes_of_its_column(method, cell, word):
    read = words_for("gpu usage", cell, method)
    assert read == word, (f"{cell!r} in the {method} column: expected {word!r}, read {read!r} "
                          "(grader/answers/aspect_words.py comparatives_as_words)")


@pytest.mark.parametrize("method, cell, word", [
    # A wrong comparison is read, so that it is marked wrong, as its word would be.
    ("dp", "more even than DDP", "balanced"), ("ddp", "less balanced than DP", "imbalanced"),
    ("ddp", "worse than DP", "imbalanced"), ("dp", "better balanced than DDP", "balanced"),
])
def test_a_wrong_comparative_is_read_as_its_wrong_word(method, cell, word):
    assert words_for("gpu usage", cell, method) == word, words_for("gpu usage", cell, method)


@pytest.mark.parametrize("method, cell", [
    # Nothing one way, a comparison with something else, a comparative turned, or a cell comparing
    # its own method with itself: a person reads it, as before.
    ("ddp", "same as DP"), ("ddp", "Same as DP"), ("dp", "about the same as DDP"), ("ddp", "similar to DP"),
    ("ddp", "as even as DP"), ("dp", "as balanced as DDP"), ("ddp", "equal to DP"),
    ("ddp", "less even than DDP"), ("dp", "more balanced than DP"), ("ddp", "more even than on GPU 0"),
    ("dp", "less loaded than GPU 0"), ("dp", "GPU 1 is less loaded than in DDP"),
    ("ddp", "DP doesn't spread it as evenly as DDP"), ("dp", "even more on GPU 0"),
    ("ddp", "more balanced than DP, less balanced than DP"), ("dp", "less balanced than expected"),
])
def test_a_comparative_that_cannot_be_decided_is_left_for_a_person(method, cell):
    read = words_for("gpu usage", cell, method)
    assert read is None, f"{cell!r} in the {method} column: expected None (a person reads it), read {read!r}"


@pytest.mark.parametrize("aspect, cell", [("data split", "more automatic than DDP"),
                                          ("processes", "more than DP")])
def test_comparatives_of_other_aspects_are_not_rewritten(aspect, cell):
    from grader.answers.aspect_words import comparatives_as_words
    assert comparatives_as_words(aspect, cell) == cell
