"""How a yes/no answer is read (grader/answers/yes_no.py), the one rule the PDF report and the
answer sheet share: the first word decides, the rest is the explanation; a no written without
the word ("Not faster") is a no, and a hedge is never guessed."""

from __future__ import annotations

import re

import pytest

from grader.answers.hw3_pdf import contract
from grader.answers.sheet import coerce, template_questions
from grader.answers.yes_no import read_growth, read_yes_no


@pytest.mark.parametrize("text, value, explanation", [
    ("No", "no", ""),
    ("no.", "no", ""),
    ("NO, because only one GPU works at a time", "no", "because only one GPU works at a time"),
    ("Yes - every GPU holds four layers.", "yes", "every GPU holds four layers."),
    ("Yes: N GPUs need N - 1 transfers.", "yes", "N GPUs need N - 1 transfers."),
    ("No. Each layer adds work.", "no", "Each layer adds work."),
    ("**No**", "no", ""),                                   # Markdown emphasis left in the PDF
    ("(yes)", "yes", ""),
    ("| no, one GPU at a time", "no", "one GPU at a time"),  # the answer cell after a table's bar
    ("no (the GPUs take turns)", "no", "(the GPUs take turns)"),
    ("Yeah, a little", "yes", "a little"), ("Nope", "no", ""),
    # A no without the word, as a TA reads it (found grading by hand): the text explains itself.
    ("Not faster", "no", "Not faster"),
    ("Not proportional at all: 2 GPUs gave no speed-up", "no",
     "Not proportional at all: 2 GPUs gave no speed-up"),
    ("Not really, GPU 0 holds more", "no", "Not really, GPU 0 holds more"),
    ("No, there is no speed-up", "no", "there is no speed-up"),
    ("Yes, no GPU is idle", "yes", "no GPU is idle"),   # "no" before a noun is no second answer
    # YAML's spelling, as a word of its own: a report says what the sheet says with true/false.
    ("True", "yes", ""), ("TRUE.", "yes", ""), ("False, only one GPU works at a time", "no",
                                                "only one GPU works at a time"),
    ("false - one at a time", "no", "one at a time"), ("True, no GPU idles", "yes", "no GPU idles"),
    ("No, true parallelism needs more GPUs busy", "no", "true parallelism needs more GPUs busy"),
    # "true" inside a clause is a word of the explanation, not a second answer (a review found
    # these unclear, a point lost in the sheet).
    ("No, the opposite is true.", "no", "the opposite is true."),
    ("No, that would only be true for a pipeline.", "no", "that would only be true for a pipeline."),
    ("False (one GPU at a time)", "no", "(one GPU at a time)"),
    # Words a hedge also uses, here qualifying the explanation, not the answer.
    ("Yes, both GPUs hold layers", "yes", "both GPUs hold layers"),
    ("No, the step time depends on DEPTH", "no", "the step time depends on DEPTH"),
    ("No, probably because of the copies", "no", "probably because of the copies"),
    ("No: either way the step time grows", "no", "either way the step time grows"),
    ("Yes, partly because of the copies", "yes", "partly because of the copies"),
    ("Yes (both readings)", "yes", "(both readings)"),   # a yes under either reading of the question
    # The template's placeholder left, the answer typed after it.
    ("... No", "no", ""), ("yes/no: No", "no", ""), ("(yes/no) Yes - all GPUs hold layers", "yes", "all GPUs hold layers"),
    # A probe of the hedge rule: these words start a reason here, not a doubt about the answer.
    ("Yes, I think it's because every GPU holds a stage", "yes", "I think it's because every GPU holds a stage"),
    ("No, sometimes it is even slower", "no", "sometimes it is even slower"),
    ("No, partially because of the copies", "no", "partially because of the copies"),
    ("Yes. Probably the biggest factor is GPU 0", "yes", "Probably the biggest factor is GPU 0"),
    ("No, but I'm not sure why", "no", "but I'm not sure why"),
    ("No, it depends on the slowest stage", "no", "it depends on the slowest stage"),
    ("No. Could be faster with a bigger batch, but here it is slower", "no",
     "Could be faster with a bigger batch, but here it is slower"),
])
def test_an_answer_starting_with_yes_or_no_is_read_with_its_explanation(text, value, explanation):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == (value, explanation), (
        f"{text!r} should read as {value!r} + {explanation!r}, read {answer}")
    assert not answer.unclear and not answer.unanswered


@pytest.mark.parametrize("text, value", [
    # The answer as a short sentence (a TA's audit: "It does not - ..." cost a point).
    ("It does not - the step time grows with DEPTH", "no"), ("They don't.", "no"),
    ("It does not improve speed: every layer adds work", "no"), ("Depth does not improve speed", "no"),
    ("They do not grow with DEPTH, only with the GPUs", "no"), ("It is not faster (one GPU at a time)", "no"),
    ("It does: every GPU holds four layers", "yes"), ("It is.", "yes"),
    ("They are - 4 layers each", "yes"),
    # Contractions, apostrophe or not (a probe's).
    ("It's not.", "no"), ("It doesnt improve speed", "no"), ("They're not all used", "no"),
])
def test_a_short_sentence_that_leaves_no_doubt_answers(text, value):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == (value, text), f"{text!r} read as {answer}"


@pytest.mark.parametrize("text, value, explanation", [
    # The answer as the reasoning's conclusion (a TA's HW3 sheet: read as "not answered").
    ("All 5 hold 4 layers each, so yes", "yes", "All 5 hold 4 layers each"),
    ("Only one GPU works at a time - therefore no.", "no", "Only one GPU works at a time"),
    ("every GPU holds layers; thus yes!", "yes", "every GPU holds layers"),
])
def test_a_yes_or_no_concluding_the_answer_is_read(text, value, explanation):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == (value, explanation), f"{text!r} read as {answer}"


@pytest.mark.parametrize("text", [
    # Found by an adversarial read of the lenient rule: each would have been a silent guess.
    "No difference", "No significant difference", "Not different", "Not bit-identical, but allclose is True",
    "Not just faster, much faster", "Never slower", "Not slower", "Yes for 2 GPUs, no for 5", "Yeah, no",
    "Nope, yes actually", "No, but yes for larger batch sizes",
    "Not necessarily", "Not always, only when it divides", "Not sure",
                                  "Partly, the memory fell.", "It depends on the model", "Nothing changes",
                                  "Yes and no: it depends.", "no/yes, both happen", "Yesterday it was faster",
                                  # "true" that is not the answer word, or both answers.
                                  "True parallelism is not reached", "Truly faster", "True/False",
                                  "False for 5 GPUs, true for 2", "True, false for 5 GPUs",
                                  # hedges whose second answer is written true/false (an adversary's)
                                  "Yes, but False for 5 GPUs", "False, but true for 2 GPUs",
                                  "Not really, true for 2 GPUs",
                                  # sentences that say something else, or both
                                  "It is slower", "It does not matter", "It does not only grow",
                                  "It does not, but it should", "It is, but not for 5 GPUs",
                                  "It does - no, it does not", "It is, however, slower",
                                  "That is, one GPU at a time", "This is not faster",
                                  # a conclusion after another answer, or more after it
                                  "No difference, so yes", "Yes for 2, so no", "so yes, mostly",
                                  # hedged right after the word, or a refusal to choose (a TA's
                                  # non-solution audit: each was read as a clear answer)
                                  "No (could be either)", "No / maybe", "yes - it depends", "Yes or not",
                                  "Yes, both answers fit", "No, it depends", "No. It depends on the machine.",
                                  "No, not sure", "Yes, maybe", "No (or yes on a real node)",
                                  "Yes, though it could be either",
                                  # the probe's: bare hedges, and non-answers led by "no"
                                  "Yes?", "No?", "Yes-ish", "Yes, likely", "Yes, hard to say", "No, can't tell",
                                  "Yes (not 100% sure)", "Yes, 50/50", "No, not necessarily", "No, not always",
                                  "Yes, but it depends on the batch size", "No idea", "No clue",
                                  "No time to run it on 5 GPUs", "No GPU is idle, all 5 hold 4 layers",
                                  "No need to split, DataParallel does it",
                                  # a second answer in brackets, in English or another language (adv57 F-A)
                                  "yes (false)", "no (oui)", "no (ja)", "Yes (nein)", "No (si)",
                                  "yes (not really)", "No (ja, for 2 GPUs)"])
def test_an_answer_that_is_no_clear_yes_or_no_is_unclear_never_guessed(text):
    answer = read_yes_no(text)
    assert answer.value is None and answer.unclear and not answer.unanswered, f"{text!r} read as {answer}"


@pytest.mark.parametrize("text", ["", "   ", "...", "…", "___", "TODO", "yes/no", "Yes / No", "yes or no", "(yes/no)"])
def test_the_templates_placeholder_left_is_unanswered(text):
    answer = read_yes_no(text)
    assert answer.value is None and answer.unanswered and not answer.unclear, f"{text!r} read as {answer}"


@pytest.mark.parametrize("text, value", [
    # The question's own subject where "it" would stand (a probe's: each was unclear).
    ("Increasing DEPTH does not improve speed", "no"), ("More GPUs do not make it faster", "no"),
    ("Increasing depth doesn't improve the speed", "no"), ("Adding more GPUs does not make training faster", "no"),
    ("The number of transfers does not grow", "no"),
    # The question's statement affirmed, nothing after it but a pause.
    ("Increasing DEPTH improves speed.", "yes"), ("More GPUs make it faster", "yes"),
    ("Increasing depth does improve speed: the GPUs overlap", "yes"),
    ("The number of transfers grows with the number of GPUs", "yes"),
])
def test_the_questions_own_subject_answers_as_it_would(text, value):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == (value, text), f"{text!r} read as {answer}"


@pytest.mark.parametrize("text", [
    # A slow-down denied is no answer to a question of speed (these were read as no).
    "It does not make it slower", "Depth does not increase the step time", "It does not reduce speed",
    "Increasing DEPTH does not make it slower", "It does not slow it down",
    # The statement qualified, asked back, or a verb that says neither.
    "Increasing DEPTH improves speed only for small batches", "Increasing DEPTH improves speed?",
    "More GPUs make it faster, but not here", "It increases", "It grows", "Increasing DEPTH makes it slower",
    "The number of GPUs is: 5",
])
def test_a_statement_that_is_not_the_questions_own_is_unclear(text):
    answer = read_yes_no(text)
    assert answer.value is None and answer.unclear, f"{text!r} read as {answer}"


@pytest.mark.parametrize("text, value, explanation", [
    # Estonian, as the first word with a pause after it, as "Yes,"/"No," are written.
    ("Ei, sest korraga töötab ainult üks GPU", "no", "sest korraga töötab ainult üks GPU"),
    ("Ei. Only one GPU works at a time", "no", "Only one GPU works at a time"),
    ("Jah, kõik 5 GPU-d on kasutusel", "yes", "kõik 5 GPU-d on kasutusel"),
    ("JAH - every GPU holds four layers", "yes", "every GPU holds four layers"),
    # The whole answer, bare (a TA's HW3 sheet: "Ei" and "Jah" were refused): nothing follows
    # that "ei" could be the "not" of.
    ("Ei", "no", ""), ("ei", "no", ""), ("Jah", "yes", ""), ("jah.", "yes", ""), ("EI!", "no", ""),
])
def test_estonian_jah_and_ei_answer_as_yes_and_no(text, value, explanation):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == (value, explanation), f"{text!r} read as {answer}"


@pytest.mark.parametrize("text", [
    # "ei" without a pause is Estonian's "not" ("is not faster"); both answers, or a doubt.
    "Ei ole kiirem", "Jah, ei", "Ei, aga jah 2 GPU puhul", "Jah, aga ei 5 GPU puhul", "Ei, võib-olla",
    "Jah - vist", "Eiffel", "Ei?", "Ei ole", "ei kiirem", "Jah ei",
])
def test_an_estonian_answer_that_is_no_clear_yes_or_no_is_unclear(text):
    answer = read_yes_no(text)
    assert answer.value is None and answer.unclear, f"{text!r} read as {answer}"


@pytest.mark.parametrize("text, value", [
    # A red team's honest sheet (adv41 p6_words2): "Not anymore" to "is GPU 0 still a
    # bottleneck?" waited for a person.
    ("Not anymore", "no"), ("Not any more", "no"), ("Not anymore, the memory is the same", "no"),
    ("Not any longer.", "no"), ("No longer", "no"), ("Never", "no"), ("Never.", "no"),
    ("Absolutely not", "no"), ("Definitely not - each rank has its own", "no"), ("Of course not.", "no"),
    ("Absolutely", "yes"), ("Of course - every rank holds a replica", "yes"), ("Definitely.", "yes"),
    ("Correct.", "yes"), ("Certainly!", "yes"), ("correct (both ranks use 8,2 MiB)", "yes"),
])
def test_a_yes_or_no_said_with_another_word_alone_is_read(text, value):
    answer = read_yes_no(text)
    assert answer.value == value and not answer.unclear, f"{text!r}: expected {value!r}, read {answer}"


@pytest.mark.parametrize("text", [
    # The same words before something else, or hedged: a person reads them.
    "Not any more than before", "Never slower", "Definitely faster", "Of course not all GPUs",
    "Correct answer is no", "Definitely, maybe", "Of course, but no for 5 GPUs", "Never, yes for 2",
    "Absolutely not sure", "Not anymore?",
])
def test_those_words_before_something_else_or_hedged_are_unclear(text):
    answer = read_yes_no(text)
    assert answer.value is None and answer.unclear, f"{text!r} read as {answer}"


@pytest.mark.parametrize("raw, value", [
    # The question's own word denied (adv41 p6_words2: waited for a person).
    ("Not automatically - each rank takes its own part through the DistributedSampler", False),
    ("Not automatically", False),
])
def test_the_questions_own_word_denied_is_a_no(raw, value):
    assert coerce(raw, template_questions("practical6")["data.split_automatically"]) is value


@pytest.mark.parametrize("raw", [
    # The antonym denied ("not manually" may mean "partly"), a turn, or a contradiction.
    "Not manually", "Not automatically, but the sampler does it", "Not automatically (yes)",
])
def test_the_antonym_denied_or_a_turn_is_left_for_a_person(raw):
    with pytest.raises(ValueError, match="expected"):
        coerce(raw, template_questions("practical6")["data.split_automatically"])


# -- "Correct." and "Of course." to every yes/no question of every handout ----------------------
# They are read as yes whatever the question (read_yes_no has no question). That is right only
# while every yes/no question is a plain one, whose "Correct." is its yes: checked for each
# (eng_words2) in the answer sheets of HW3, Practicals 4, 5, 6, 10 and in the HW3 report's labels
# and handout questions. A question asking between two things ("Is it true that X, or Y?", "X or
# Y?") or a negative one ("Isn't X?") would make "Correct." no yes: this test then fails, and
# such a question needs "Correct." read as None (a person reads it).
_ASSIGNMENTS = ("hw3", "practical4", "practical5", "practical6", "practical10")
SHEET_YES_NO = [(assignment, question) for assignment in _ASSIGNMENTS
                for question in template_questions(assignment).values() if question.type == "bool"]
REPORT_YES_NO = [(label.field, text) for label in contract.LABELLED_ANSWERS if label.kind == "yes_no"
                 for text in (label.template_text, label.handout_text) if text]
AGREEING = ("Correct.", "Of course.", "Correct", "Of course!", "correct - every GPU holds layers",
            # (eng_words3) agreement in other words, checked against the same questions
            "Right.", "That's right", "Exactly.", "Indeed.", "Sure.", "Right, every GPU holds layers")
# What may say "or" without asking between two things: the template's "(yes/no)".
_YES_OR_NO = re.compile(r"[(\[]?\s*yes\s*(?:/|or)\s*no\s*[)\]]?", re.I)
_NOT_A_PLAIN_QUESTION = re.compile(r"\bor\b|\bis\s+it\s+true\s+that\b|n['’]t\b|\bnot\b|\bwhich\b", re.I)


def test_every_handouts_yes_no_questions_are_all_here():
    assert len(SHEET_YES_NO) == 15 and len(REPORT_YES_NO) == 7, (
        f"expected 15 yes/no sheet questions and 7 report labels (template + handout), found "
        f"{len(SHEET_YES_NO)} and {len(REPORT_YES_NO)}: check the new ones for 'Correct.' below")


@pytest.mark.parametrize("where, question", [(f"{a} {q.id}", q.text) for a, q in SHEET_YES_NO]
                         + REPORT_YES_NO)
def test_each_yes_no_question_is_a_plain_one_that_correct_answers(where, question):
    asked = _YES_OR_NO.sub("", question)
    assert not _NOT_A_PLAIN_QUESTION.search(asked), (
        f"{where}: {question!r} asks between two things or negatively: 'Correct.' / 'Of course.' "
        "to it is no yes; read them as None there (grader/answers/yes_no.py _FIRST)")


@pytest.mark.parametrize("said", AGREEING)
@pytest.mark.parametrize("assignment, question", SHEET_YES_NO, ids=lambda v: getattr(v, "id", v))
def test_correct_or_of_course_on_a_sheet_is_yes(assignment, question, said):
    assert coerce(said, question) is True, (
        f"{assignment} {question.id}: {said!r} read as {coerce(said, question)!r}")


@pytest.mark.parametrize("said", AGREEING)
@pytest.mark.parametrize("field, question", REPORT_YES_NO)
def test_correct_or_of_course_in_a_report_is_yes(field, question, said):
    answer = read_growth(said, question) or read_yes_no(said)
    assert answer.value == "yes", f"{field} after {question!r}: {said!r} read as {answer}"


def test_task5s_handout_question_is_no_yes_no_question():
    """HW3 Task 5's handout asks "What is the relationship ...?": "Correct." there would mean
    nothing. No yes/no is read after that question (only after the template's label)."""
    label = next(la for la in contract.LABELLED_ANSWERS if la.field == "task5.transfers_grow_with_gpus")
    assert label.handout_pattern is None and label.handout_text is None, label


# -- agreement in other words (eng_words3) -------------------------------------------------------
# "Right." / "That's right" / "Exactly." / "Indeed." / "Sure." were read as no answer, where
# "Correct." and "Of course" were a yes: to a plain yes/no question (every handout's is: the
# tests above check each question with these words too) a TA reads them as a yes. Only alone,
# with a pause after them: the same words before something else, asked back, or taken back
# stay for a person, and "Not exactly" / "Not really" are never a yes.
AGREEMENT_IS_YES = [
    ("Right.", ""), ("Right", ""), ("right, every rank holds the same replica", "every rank holds the same replica"),
    ("Right - the step time grows with DEPTH", "the step time grows with DEPTH"),
    ("That's right", ""), ("That’s right!", ""), ("Thats right.", ""), ("That is right: 4 layers each", "4 layers each"),
    ("That's correct.", ""), ("Quite right", ""), ("Exactly right.", ""), ("Absolutely right", ""),
    ("Exactly.", ""), ("Exactly!", ""), ("exactly (2 GPUs, 1.9x)", "(2 GPUs, 1.9x)"),
    ("Indeed.", ""), ("Indeed, both GPUs use 840 MiB", "both GPUs use 840 MiB"),
    ("Sure.", ""), ("Sure - allclose printed True", "allclose printed True"), ("Precisely.", ""),
    ("Definitely", ""), ("Absolutely", ""),
    ("Right: no GPU is idle", "no GPU is idle"),   # "no" before a noun is no second answer
]


@pytest.mark.parametrize("text, explanation", AGREEMENT_IS_YES)
def test_agreement_said_alone_is_a_yes(text, explanation):
    answer = read_yes_no(text)
    assert (answer.value, answer.explanation) == ("yes", explanation), (
        f"{text!r}: expected yes + {explanation!r}, read {answer} (grader/answers/yes_no.py _AGREEING)")


NOT_AGREEMENT = [
    # The same words taken back, denied or asked back.
    "Not exactly", "Not exactly, only 1.4x", "Not right", "Right?", "Sure?", "Exactly?", "Right!?",
    "Right, no", "Sure, maybe", "Exactly, it depends", "Indeed not", "Right, no for 5 GPUs",
    # Before something else: a noun phrase, a number, another word.
    "right GPU", "Right side of the table", "Right-hand side", "Right GPU 0", "exactly 2x",
    "Exactly 2x faster", "Exactly 2 GPUs", "Right now it is slower", "Sure thing", "Rightly so",
    "Indeed slower", "Surely faster",
]


@pytest.mark.parametrize("text", NOT_AGREEMENT)
def test_those_words_taken_back_or_before_something_else_are_no_yes(text):
    answer = read_yes_no(text)
    assert answer.value != "yes", f"{text!r}: expected no yes (unclear, or a no), read {answer}"


def test_not_really_stays_a_no():
    assert read_yes_no("Not really").value == "no"


# -- the question's comparison restated: "than DP" (eng_words3) ------------------------------------
# Practical 6 asks "compared with DataParallel, are the GPUs more balanced?"; "More balanced than
# DP" restates the question's comparison and answers it, as "More balanced" does.
@pytest.mark.parametrize("raw, value", [
    ("More balanced than DP", True), ("more balanced than DataParallel", True),
    ("They are more balanced than with DataParallel", True), ("More balanced than DP (both 840 MiB)", True),
    ("More balanced than DataParallel does", True), ("Less balanced than DP", False),
    ("Less balanced than DP: GPU 0 holds more", False),
])
def test_the_questions_comparison_restated_answers(raw, value):
    question = template_questions("practical6")["usage.more_balanced"]
    assert coerce(raw, question) is value, f"{raw!r}: expected {value}"


@pytest.mark.parametrize("raw", [
    # Another comparison, asked back, or turned: a person reads it.
    "More balanced than DDP", "More balanced than on one GPU", "More balanced than DP?",
    "More balanced than DP, but not always", "More balanced than DistributedDataParallel",
])
def test_another_comparison_is_left_for_a_person(raw):
    with pytest.raises(ValueError, match="expected"):
        coerce(raw, template_questions("practical6")["usage.more_balanced"])


# adv55 I: Practical 10's "does the execution pattern change?" answered by its own word's antonym.
@pytest.mark.parametrize("said, read", [
    ("unchanged", False), ("Unchanged.", False), ("The pattern is unchanged", False),
    ("Unchanged, only the micro-batch size changes", False),
    # A doubt, a turn, a degree that hedges, a denial: for a person.
    ("unchanged?", None), ("unchanged, but it could change", None), ("Mostly unchanged", None),
    ("not unchanged", None), ("It is unchanged but slower", None),
])
def test_unchanged_answers_does_the_pattern_change(said, read):
    question = template_questions("practical10")["batch.pattern_changes"]
    try:
        got = coerce(said, question)
    except ValueError:
        got = None
    assert got == read, f"{said!r}: expected {read!r}, observed {got!r} (see yes_no.py WORD_PAIRS)"


@pytest.mark.parametrize("text, value", [
    # The same answer again in brackets, or a reason there: read (adv57 F-A's honest twins).
    ("yes (true)", "yes"), ("No (nein)", "no"), ("Yes (si)", "yes"), ("no (false)", "no"),
    ("Yes (data parallel)", "yes"), ("No (the opposite is true)", "no"),
    ("yes, false sharing aside", "yes"), ("Yes, not really needed here", "yes"),
])
def test_a_bracket_agreeing_with_the_answer_is_read(text, value):
    answer = read_yes_no(text)
    assert answer.value == value, f"{text!r}: expected {value!r}, read {answer} (grader/answers/yes_no.py _OTHER_NO/_OTHER_YES)"
