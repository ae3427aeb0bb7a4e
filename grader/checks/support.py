"""Wording of the checks' feedback: what was expected, what was observed, where to look."""
from __future__ import annotations

import os

from grader.common.text import answer_shown

# Set to "1" for the student's own loop before the work is handed in (`pdl-grade check`, and
# `pytest grader/` by default: grader/checks/conftest.py); the course's grading sets "0". A
# student's audit: the loop printed what the provided code does for Task 1 and the counts for
# Task 5 on the untouched template, so those answers were copied from the feedback, learnt
# from nothing. Where it is "1", an answer the code contradicts is said to disagree, and
# what the code does is left for the graded report.
HIDE_ANSWERS_ENV = "PDL_HIDE_ANSWERS"
HIDDEN = "what it does is not shown before the work is graded: run it (pdl-grade run) and look"


def answers_hidden() -> bool:
    return os.environ.get(HIDE_ANSWERS_ENV) == "1"


def explain(expected: str, observed: str, look: str | None = None) -> str:
    text = f"Expected: {expected}\nObserved: {observed}"
    if look:
        text += f"\nWhere to look: {look}"
    return text


def require_run(observation) -> None:
    """A check on a run that crashed, hung or is missing fails with that reason, and only that."""
    if not observation.ok:
        raise AssertionError(observation.problem())


def chunk_sizes(batch: int, parts: int) -> list[int]:
    """`torch.chunk`'s rule, which DataParallel's scatter uses: chunks of ceil(B/N) rows."""
    size = -(-batch // parts)
    return [min(size, batch - start) for start in range(0, batch, size)]


def close(a: float, b: float, rel: float = 1e-4, abs_: float = 1e-6) -> bool:
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


class AnswerNotRead(AssertionError):
    """A check's failure because the answer it checks was found but could not be read (a
    worded answer, a scan, pasted output): no verdict, its points wait for a person. The
    pytest plugin records `unread_answer` (the question's id) in the case's metadata, which
    grader/scoring reads: a reworded message never changes the score."""

    def __init__(self, message: str, unread_answer: str):
        super().__init__(message)
        self.unread_answer = unread_answer


class GradedByHand(AssertionError):
    """A check's failure because the grader could not run it on code that itself works (HW3:
    the probe could not build the model the way the student's own script, which ran to its
    end, builds it): the grader failed, not the student, so no verdict: its points wait for a
    person, as an AnswerNotRead's do. The pytest plugin records `graded_by_hand` (what the
    grader could not do, a short id) in the case's metadata, which grader/scoring reads."""

    def __init__(self, message: str, graded_by_hand: str):
        super().__init__(message)
        self.graded_by_hand = graded_by_hand


def no_answer(answers, qid: str, observed: str) -> AssertionError:
    """The failure of a check whose answer `qid` is not among the values read: an
    AnswerNotRead where the answer was found but not read, else a plain AssertionError.
    `observed`: what the student is told (not_found's text, and more)."""
    message = explain(f"an answer to: {answers.questions.get(qid, qid)}", observed,
                      answers.where_to_answer(qid))
    if qid in (getattr(answers, "unread", None) or ()):
        return AnswerNotRead(message, qid)
    return AssertionError(message)


def reported(answers, qid: str):
    """The student's answer to `qid`; a check on an answer that is not there fails saying
    where it belongs (the report's label, the answer sheet's id)."""
    if qid in answers.values:
        return answers.values[qid]
    raise no_answer(answers, qid, not_found(answers, qid))


def not_done_said(declined: dict) -> str:
    """What a student is told of an answer that says it was not done (collect's `declined`)."""
    where = ", ".join(str(p) for p in (declined.get("file"), declined.get("where")) if p)
    return (f"you wrote '{declined.get('said', '')}'" + (f" ({where})" if where else "")
            + ": an answer that says the task was not done is no answer, so it scores 0")


def not_found(answers, qid: str) -> str:
    """'no answer found', with why where the answer was there but could not be read (a table
    written as a list of lists, a word where a number belongs)."""
    said = getattr(answers, "unread_why", {}).get(qid)
    if said:
        return said   # "your answer '3 or 4 each' could not be read as ..."
    not_done = (getattr(answers, "declined", None) or {}).get(qid)
    if not_done:
        return not_done_said(not_done)
    problems = getattr(answers, "problems", [])
    why = [p for p in problems if f": {qid}:" in p]
    if not why and qid in getattr(answers, "unread", []) and problems:
        why = problems[:1]   # the file's own problem: a scan, a file of another kind
    return "no answer found" + (f" ({why[0]})" if why else "")


# What to do about measured numbers the code contradicts: measure again, never edit them.
MEASURE_AGAIN = ("measure again (the median of several steps after a warm-up, with "
                 "torch.cuda.synchronize() before each reading of the clock) and report what you "
                 "measure")
MEASURE_MEMORY_AGAIN = ("measure again (each GPU's peak, torch.cuda.max_memory_allocated(i) "
                        "after the timed steps: one value per GPU) and report what you measure")


def disagrees(answers, qid: str, expected: str, observed_in_code: str, value,
              code_decides: bool = True, truth_from: str = "what your code does",
              measured: bool | str = False) -> str:
    """Feedback for an answer that the student's own code contradicts: both, side by side.
    `code_decides`: False for a fact no edit of the task's code changes (naive model
    parallelism is not faster), where "or the code" would send the student the wrong way.
    `truth_from`: what the answer is held to, where that is not the code (DataParallel's chunk
    rule, which code with device_ids hard-coded does not follow). `measured`: the answer is a
    table of the student's measurements, which are measured again, not corrected (a TA's audit:
    "correct the answer" invites editing numbers); "memory" for peak-memory values."""
    source = answers.origin.get(qid, "your answers")
    shown = value if isinstance(value, str) else repr(value)
    again = MEASURE_MEMORY_AGAIN if measured == "memory" else MEASURE_AGAIN
    fix = (f"{source}: {again}" if measured else
           f"{source}: correct the answer" + (", or the code if the answer is what you meant"
                                              if code_decides else
                                              " to what the measurement of your code shows"))
    if answers_hidden():
        return explain(f"your answer to {qid} agrees with {truth_from}",
                       f"you reported {shown} ({source}); your code does otherwise ({HIDDEN})",
                       fix)
    return explain(f"your answer to {qid} agrees with {truth_from}: {expected}",
                   f"you reported {shown} ({source}); your code {observed_in_code}", fix)


def must_agree(answers, qid: str, value, truth, expected: str, observed_in_code: str,
               flag=None, truth_from: str = "what your code does") -> None:
    """Fail unless the student's answer equals what their code does (or `truth_from` says
    what else it is held to); a disagreement is also flagged for the instructor (a report of
    numbers the code cannot produce)."""
    if value == truth:
        return
    if flag is not None:
        flag(f"{qid}: reported {answer_shown(value)}, but the code {observed_in_code}")
    raise AssertionError(disagrees(answers, qid, expected, observed_in_code, value,
                                   truth_from=truth_from))
