"""Exit statuses `pdl-grade grade` shares with what runs it as a command (a SLURM job's script,
grader/cluster/backend.py; Gradescope's gradescope/run_autograder): 0 graded, 1 a crash (a
Python traceback), 2 a wrong folder or option (nothing graded), and this one."""

# Graded, and result.json written, but the grader failed to grade an assignment (its
# `grading_problems`: a check that did not run or errored, grader/scoring/score.py): that
# assignment has no grade until it is graded again. What runs the command reads result.json,
# which says which and why, as after a 0.
GRADING_PROBLEM = 3
