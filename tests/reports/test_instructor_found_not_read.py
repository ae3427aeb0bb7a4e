"""instructor.md for an answer found but not read: its check's points wait for the instructor
(grader/scoring/score.py), so the overrides block lists the item uncommented with points: null
(pasted unfilled, it keeps waiting), and the list of what the grader cannot read says the
points wait, not "scored 0" (audit 26)."""
from __future__ import annotations

import yaml

from grader.answers.collect import Answers
from grader.answers.sheet import template_questions
from grader.reports.instructor import render_instructor_markdown
from grader.scoring import build_result, load_rubrics, score_assignment
from tests.scoring.scoring_reports import case, report

QID = "task1.layers_per_gpu"


def _result() -> dict:
    rubric = load_rubrics()["hw3"]
    questions = {qid: q.text for qid, q in template_questions("hw3").items()}
    answers = Answers("hw3", "pdf_then_sheet", missing=[QID], unread=[QID], questions=questions,
                      problems=["'Layers per GPU (DEPTH=6, 2 GPUs)' is answered 'GPU 0 gets 3 layers, GPU 1 gets', "
                                "which could not be read as a list of whole numbers: a person must read it"])
    message = f"Expected: an answer to: {questions[QID]}\nObserved: 'GPU 0 gets 3 layers, GPU 1 gets'"
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task1.layers_reported"]
    tests.append(case("hw3.task1.layers_reported", "failed", feedback=message, unread_answer=QID))
    tests[0]["metadata"]["answers"] = answers.to_dict()
    scored = score_assignment(rubric, report(tests)).to_dict()
    scored["answers"] = answers.to_dict()
    return build_result("hw3_dict_mixed", [scored])


def test_the_instructor_sets_the_points_that_wait(tmp_path):
    md = render_instructor_markdown(_result(), load_rubrics())
    assert "answers the grader found but could not read worth 1, of the 15 points wait for a person" in md
    assert "so scored 0" not in md
    assert ("the points of `hw3.task1` that its checks could not give for them wait for you, not in the total "
            "until you set the item's points in the overrides block at the end: `task1.layers_per_gpu`.") in md
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert "hw3.task1: {points: null, comment: \"\"}  # automatic: " in block
    assert yaml.safe_load(block)["hw3.task1"] == {"points": None, "comment": ""}


# -- a P5 sheet with nvidia-smi's box pasted under usage.table (a TA's audit 27, p5_devids_smi) --
NVIDIA_SMI = ("+-----------------------------------------+\n"
              "|   0  Tesla V100-SXM2-32GB           On  |\n"
              "| N/A   41C    P0   68W / 300W |   1012MiB / 32768MiB |     38%      Default |\n"
              "|   1  Tesla V100-SXM2-32GB           On  |\n"
              "| N/A   38C    P0   57W / 300W |    618MiB / 32768MiB |     21%      Default |\n")


def _p5_pasted(tmp_path, source_of_the_rest: str = "sheet") -> str:
    from grader.answers.collect import collect_answers
    folder = tmp_path / "practical5"
    folder.mkdir()
    block = "\n".join("      " + line for line in NVIDIA_SMI.splitlines())
    (folder / "answers.yaml").write_text(
        "assignment: practical5\nanswers:\n"
        "  memory.differences: {type: text, value: \"cuda:0 holds the most: it gathers the outputs.\"}\n"
        "  discussion.advantage: {type: text, value: \"\"}\n"
        "  usage.table:\n    type: table\n    columns: [gpu, utilization_percent, memory_mib]\n"
        "    rows: |\n" + block + "\n", encoding="utf-8")
    answers = collect_answers(tmp_path, "practical5", source_of_the_rest)
    rubric = load_rubrics()["practical5"]
    tests = [case(c) for c in rubric.check_ids]
    tests[0]["metadata"]["answers"] = answers.to_dict()
    scored = score_assignment(rubric, report(tests)).to_dict()
    scored["answers"] = answers.to_dict()
    return render_instructor_markdown(build_result("p5_devids_smi", [scored]), load_rubrics())


def test_the_pasted_text_is_shown_to_the_instructor(tmp_path):
    """instructor.md named `usage.table` as not read but did not show it: the TA had to open the YAML."""
    md = _p5_pasted(tmp_path)
    shown = md.split("`usage.table` as written in practical5/answers.yaml:", 1)
    assert len(shown) == 2, md
    assert "| N/A   41C    P0   68W / 300W |   1012MiB / 32768MiB |     38%      Default |" in shown[1].split("###")[0]


def test_an_unanswered_written_item_beside_an_unread_answer_is_skeletoned_0_as_elsewhere(tmp_path):
    """P5's skeleton had left `points: null` (pending) for Part 6 unanswered because another answer of
    the sheet could not be read, while P10's pre-filled 0: a sheet keeps each answer under its own id,
    so the paste under usage.table hides no other answer."""
    block = _p5_pasted(tmp_path).split("## Overrides to fill in", 1)[1]
    assert 'practical5.advantage: {points: 0, comment: "no answer handed in"}' in block, block
    assert 'practical5.limitation: {points: 0, comment: "no answer handed in"}' in block, block
    assert 'practical5.memory: {points: null, comment: ""}' in block, block   # answered: graded by a person


def test_an_answer_sheet_that_could_not_be_read_leaves_them_pending(tmp_path):
    """A problem of the file itself (or an answer under an id of its own) may hold any answer."""
    from grader.reports.student_view import surely_unanswered
    answers = {"source": "sheet", "missing": ["discussion.advantage"], "unread": [],
               "questions": {"discussion.advantage": "?", "usage.table": "?"},
               "files": [{"file": "practical5/answers.yaml", "status": "problems"}]}
    assert surely_unanswered(dict(answers, problems=[
        "practical5/answers.yaml: usage.table: nvidia-smi's output pasted"])) == {"discussion.advantage"}
    for problem in ("practical5/answers.yaml: 'discussion.advantages' is not a question of this sheet; ignored",
                    "practical5/answers.yaml is not UTF-8 text (invalid start byte); no answer of it was read"):
        assert surely_unanswered(dict(answers, problems=[problem])) == set(), problem
    assert surely_unanswered(dict(answers, source="pdf_then_sheet", problems=[
        "practical5/answers.yaml: usage.table: nvidia-smi's output pasted"])) == set()
