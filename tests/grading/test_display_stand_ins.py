"""tqdm and matplotlib only display: where they are not installed, a graded run imports
display-only stand-ins (grader/vgpu/boot/display_only) found after site-packages and after the
script's folder, and the report says so in a note, no points (adv37 F1b: a tqdm progress bar
had scored 0.25/12, a matplotlib plot of HW3's Task 2 2/15)."""
import html
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.harness.course_environment import display_stand_in_notes
from grader.harness.execute import run_script
from grader.reports.render import render_html, render_markdown
from grader.scoring.check_results import environment_notes
from tests.reports.test_rounding_note import scored

BOOT = Path(__file__).resolve().parents[2] / "grader" / "vgpu" / "boot"
STAND_INS = BOOT / "display_only"
TQDM_NOTE = ("tqdm is not in the grading environment: a display-only stand-in was used; your "
             "progress bars were not drawn")
PLOT_NOTE = ("matplotlib is not in the grading environment: a display-only stand-in was used; "
             "your plots were not drawn")

# How students use them: a bar over the steps, a bar updated by hand, tqdm.write for the loss,
# a figure of the step times saved and shown.
STUDENT_SCRIPT = '''
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from tqdm import tqdm, trange
from tqdm.auto import tqdm as auto_tqdm
import tqdm as tqdm_module

times = []
for step in tqdm(range(4), desc="steps", disable=False):
    times.append(float(step))
with tqdm(total=3, unit="batch") as bar:
    for _ in range(3):
        bar.update()
        bar.set_description("epoch 0")
        bar.set_postfix(loss=0.5)
        bar.set_postfix_str("loss=0.5")
    done = bar.n
bar = auto_tqdm(iter([1, 2]), leave=False)
seen = list(bar)
bar.close()
tqdm.write(f"steps {times} done {done} seen {seen} trange {list(trange(2))} len {len(tqdm(range(5)))}")
print("notebook", list(tqdm_module.tqdm_notebook([7])))

fig, ax = plt.subplots(figsize=(4, 3))
line, = ax.plot(times, label="step time")
ax.set_xlabel("step"); ax.legend(); ax.grid(True)
fig, axes = plt.subplots(2, 2)
axes[0, 1].bar([1, 2], [3, 4]); [a.set_title("t") for a in axes.flat]
fig, (left, right) = plt.subplots(1, 2, sharey=True)
plt.figure(); plt.plot(times); plt.xlabel("step"); plt.tight_layout()
plt.savefig("step_times.png", dpi=150); fig.savefig("again.pdf"); plt.show(); plt.close("all")
import os
print("written", sorted(f for f in os.listdir(".") if f.endswith((".png", ".pdf"))))
'''


def _plain_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter whose sys.path ends with the stand-ins, as a graded run's
    (without the node: no torch to import, so it takes a fraction of a second)."""
    prelude = f"import sys; sys.path.append({str(STAND_INS)!r})\n"
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=cwd, text=True,
                          capture_output=True, timeout=60)


def test_the_stand_ins_accept_what_students_write_and_draw_nothing(tmp_path):
    ran = _plain_python(STUDENT_SCRIPT, tmp_path)
    assert ran.returncode == 0, f"expected the script to run with the stand-ins; stderr:\n{ran.stderr}"
    assert ("steps [0.0, 1.0, 2.0, 3.0] done 3 seen [1, 2] trange [0, 1] len 5"
            in ran.stdout), f"expected the iterables passed through as they are; got {ran.stdout!r}"
    assert "notebook [7]" in ran.stdout
    assert "written []" in ran.stdout, "savefig must write nothing (the scratch keeps no images)"
    assert display_stand_in_notes(ran.stderr) == [PLOT_NOTE, TQDM_NOTE], \
        f"expected one note per stand-in imported; stderr was {ran.stderr!r}"


def test_the_boot_puts_the_stand_ins_after_site_packages(tmp_path):
    """A real install wins: the stand-ins' folder is the last entry of a run's sys.path."""
    env = dict(os.environ, PYTHONPATH=str(BOOT))
    env.pop("PDL_VGPU_GPUS", None)
    ran = subprocess.run([sys.executable, "-c", "import sys, site; print(repr(sys.path)); "
                          "print(repr(site.getsitepackages()))"], cwd=tmp_path, env=env,
                         text=True, capture_output=True, timeout=60)
    path, site_packages = (eval(line) for line in ran.stdout.splitlines())
    assert path[-1] == str(STAND_INS), f"expected the stand-ins last on sys.path; got {path}"
    assert all(path.index(p) < len(path) - 1 for p in site_packages if p in path)


def test_no_stand_in_for_what_computes():
    assert sorted(p.name for p in STAND_INS.iterdir() if p.is_dir() and p.name != "__pycache__") \
        == ["matplotlib", "tqdm"], "only display-only packages may have stand-ins"


def test_notes_come_only_from_the_stand_ins_lines():
    stderr = ("pdl-autograder: tqdm is not in the grading environment: a display-only stand-in "
              "was used; your progress bars were not drawn\n" * 4 +   # one line per rank
              "pdl-autograder: numpy is not in the grading environment: a display-only "
              "stand-in was used\n" + "Traceback: No module named 'tqdm'\n")
    assert display_stand_in_notes(stderr) == [TQDM_NOTE]
    assert display_stand_in_notes("") == [] and display_stand_in_notes(None) == []


def test_the_report_says_the_note_and_takes_nothing_off():
    result = scored(["passed", "passed", "passed"])
    before = render_markdown(result)
    result["assignments"][0]["environment_notes"] = environment_notes(
        {"environment_notes": [TQDM_NOTE, PLOT_NOTE]})
    text = render_markdown(result)
    assert f"- {TQDM_NOTE}" in text and f"- {PLOT_NOTE}" in text, text
    assert PLOT_NOTE in html.unescape(render_html(result))
    assert before.split("\n", 3)[2] == text.split("\n", 3)[2], "the total must not change"
    assert "Notes" not in before


@pytest.mark.slow
def test_a_graded_run_imports_the_stand_ins_and_a_students_own_tqdm_stays_theirs(tmp_path):
    submission = tmp_path / "sub"
    for folder in ("practical5", "practical6"):
        (submission / folder).mkdir(parents=True)
    (submission / "practical5" / "displays.py").write_text(
        "import torch\n" + STUDENT_SCRIPT + "print('cuda', torch.ones(1, device='cuda:0').device)\n")
    (submission / "practical5" / "plain.py").write_text("import torch\nprint(torch.ones(1).sum())\n")
    (submission / "practical6" / "tqdm.py").write_text("def tqdm(it, **kw):\n    return list(it)[:1]\n")
    (submission / "practical6" / "own.py").write_text("from tqdm import tqdm\nprint('own', tqdm(range(3)))\n")
    ran = run_script(submission, "practical5/displays.py", gpus=1, timeout_s=120,
                     scratch_root=tmp_path)
    assert ran.ok, ran.problem()
    assert "done 3 seen [1, 2]" in ran.stdout and "cuda cuda:0" in ran.stdout, ran.stdout
    assert display_stand_in_notes(ran.stderr) == [PLOT_NOTE, TQDM_NOTE], ran.stderr
    assert not ran.integrity and not ran.integrity_notes, (ran.integrity, ran.integrity_notes)
    own = run_script(submission, "practical6/own.py", gpus=1, timeout_s=120, scratch_root=tmp_path)
    assert own.ok and "own [0]" in own.stdout, (own.stdout, own.problem())
    assert display_stand_in_notes(own.stderr) == []
    # torch.hub imports tqdm in every run that imports torch: no note where no bar was made.
    plain = run_script(submission, "practical5/plain.py", gpus=1, timeout_s=120, scratch_root=tmp_path)
    assert plain.ok and display_stand_in_notes(plain.stderr) == [], plain.stderr
