"""The grader's runs of Practicals 5, 6 and 10 take at most the template's STEPS (adv37 F5): a
script left at STEPS = 300 (P5) or 100 (P10) ran out of time in every run and lost half its
points (P5 5.58/12, P10 5.8/12). The runs lower STEPS where the file assigns a larger whole
number at its top level (an expression too where the grader can work it out, the graded runs'
no arguments and no variable of the script's own included: test_run_steps_expressions.py),
never raise it, and leave any other value alone; the checks that count
steps use the steps the run got (trained to the end) or the file's (the student's own timing
table). The file itself is never changed."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical5 as p5
from grader.checks import test_practical10 as p10
from grader.checks.practical_answers import total_disagreements
from grader.harness.observation import Observation

P5_SCRIPTS = ["practical5/practical5_dp.py", "practical5/practical5_single.py"]
P6_SCRIPT = "practical6/practical6_ddp.py"
TEMPLATE = {"practical5/practical5_dp.py": 10, "practical5/practical5_single.py": 10,
            P6_SCRIPT: 10, "practical10/sample.py": 3}
REFERENCE_P10 = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"


def handed_in(tmp_path, script: str, text: str):
    path = tmp_path / script
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("script", [*P5_SCRIPTS, P6_SCRIPT])
@pytest.mark.parametrize("text, sets", [
    ("BATCH_SIZE = 64\nSTEPS = 300\n", {"STEPS": 10}),                       # lowered
    ("BATCH_SIZE = 60\nSTEPS = 300\n", {"BATCH_SIZE": 64, "STEPS": 10}),     # both set back
    ("BATCH_SIZE, STEPS = 64, 50\n", {"STEPS": 10}),                         # tuple assignment
    ("BATCH_SIZE = 64\nSTEPS = 10\n", None),                                 # the template's
    ("BATCH_SIZE = 64\nSTEPS = 5\n", None),                                  # never raised
    ("import sys\nSTEPS = int(sys.argv[1]) if sys.argv[1:] else 300\n", {"STEPS": 10}),  # no args
    ("import json\nSTEPS = json.load(open('run.json'))['steps']\n", None),      # not readable
    ("def main():\n    STEPS = 300\n", None),                                # not top level
    ("STEPS = (\n", None),                                                   # does not parse
])
def test_practical5_and_6_runs_take_at_most_the_templates_steps(tmp_path, script, text, sets):
    submission = handed_in(tmp_path, script, text)
    assert pm.handout_sets(submission, script) == sets, (
        f"expected the run of {script} handed in as {text!r} to set {sets}; observed "
        f"{pm.handout_sets(submission, script)} (practical_measures.handout_sets / steps_limit)")
    assert (submission / script).read_text(encoding="utf-8") == text, "the file was changed"


def test_the_limits_are_the_templates_steps():
    assert pm.TEMPLATE_STEPS == TEMPLATE, (
        f"expected the templates' STEPS {TEMPLATE}; observed {pm.TEMPLATE_STEPS}")


def p10_handout(tmp_path, steps_line: str) -> p10.HandoutRuns:
    text = REFERENCE_P10.read_text(encoding="utf-8")
    assert text.count("STEPS = 3\n") == 1, "the reference's sample.py no longer has STEPS = 3"
    text = text.replace("STEPS = 3\n", steps_line)
    return p10.HandoutRuns(runs=None, submission=handed_in(tmp_path, p10.SCRIPT, text))


def p10_specs(handout) -> list[dict]:
    return [handout.spec(), handout.spec(processes=1), handout.spec(broken=True),
            *(handout.spec(BATCH_SIZE=b, MICRO_BATCHES=m) for b, m in p10.CONFIGS),
            *(handout.spec(processes=1, MICRO_BATCHES=m) for m in [1, *p10.INVARIANCE])]


def test_every_practical10_run_of_a_long_script_takes_three_steps(tmp_path):
    for spec in p10_specs(p10_handout(tmp_path, "STEPS = 100\n")):
        assert (spec["sets"] or {}).get("STEPS") == 3, (
            f"expected STEPS=3 in every run of sample.py handed in with STEPS = 100; observed "
            f"sets {spec['sets']} (test_practical10.HandoutRuns.spec)")


@pytest.mark.parametrize("line", ["STEPS = 3\n", "STEPS = 2\n"])
def test_practical10_runs_of_a_short_script_keep_its_steps(tmp_path, line):
    handout = p10_handout(tmp_path, line)
    for spec in p10_specs(handout):
        assert "STEPS" not in (spec["sets"] or {}), (
            f"expected no STEPS set for sample.py handed in with {line.strip()}; observed sets "
            f"{spec['sets']}")
    assert handout.spec()["sets"] is None, "the template's own state sets nothing"


def stepped_run(steps: int, sets: dict, returncode=0) -> Observation:
    events = [{"event": "step", "rank": 0, "t": float(k)} for k in range(steps)]
    return Observation(script=P5_SCRIPTS[0], gpus=2, returncode=returncode, events=events,
                       sets=sets)


def test_a_crash_after_the_lowered_steps_still_trained_to_the_end(tmp_path):
    """A crash after the last step (a cleanup) keeps the training: the steps asked for are the
    run's 10, not the file's 300."""
    submission = handed_in(tmp_path, P5_SCRIPTS[0], "STEPS = 300\n")
    crashed = stepped_run(10, {"STEPS": 10}, returncode=1)
    assert p5.trained_to_the_end(crashed, submission, P5_SCRIPTS[0]), (
        "expected a run lowered to STEPS=10 that took 10 steps, then crashed, to count as "
        "trained to the end; observed not (test_practical5.trained_to_the_end)")
    assert not p5.trained_to_the_end(stepped_run(4, {"STEPS": 10}, returncode=1), submission,
                                     P5_SCRIPTS[0]), "a crash at step 4 of 10 did not train"


def test_the_students_timing_table_is_compared_with_the_files_steps(tmp_path):
    """The student timed 300 steps: a total of 300 x 0.01 s is right, one of 10 x 0.01 s (the
    grader's run) is too short for the student's run."""
    submission = handed_in(tmp_path, P5_SCRIPTS[0], "STEPS = 300\n")
    lowered = stepped_run(10, {"STEPS": 10})
    steps = pm.steps_as_written(lowered, submission, P5_SCRIPTS[0])
    assert steps == 300, f"expected the file's 300 steps; observed {steps} (steps_as_written)"
    assert pm.steps_as_written(stepped_run(7, {}), submission, P5_SCRIPTS[0]) == 7, (
        "a run the grader did not lower counts the steps it took")
    right = {"dp": {"step_time_s": 0.01, "total_time_s": 3.2}}
    short = {"dp": {"step_time_s": 0.01, "total_time_s": 0.11}}
    assert total_disagreements(right, {"dp": steps}) == ([], [])
    assert total_disagreements(short, {"dp": steps})[0], "a total shorter than 300 steps passed"
