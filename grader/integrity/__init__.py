"""Is what a run showed the grader's own observation?

Observations are made inside the student's process (the virtual GPUs and their trace), so a
submission written to deceive could forge or suppress them. Two defences, both decided outside
the student's processes:
- `scan`: the submission's source is read (never run) by the grader for code that reaches into
  the grader, its environment, PyTorch's dispatch internals or the interpreter's machinery
  (imports of `grader`, `gc`, `exec`, patched modules, ...): no homework needs them;
- `seal`: every record the instrumentation writes is numbered and HMAC-sealed with a key drawn
  per run, and only records that verify are used; lines written any other way are reported.
What either finds withholds the assignment's automatic points for a person to review
(`_integrity_review` in grader/scoring/score.py).
"""
