"""Is what a run showed the grader's own observation, and does the code try to change that?

Observations are made inside the student's processes (the virtual GPUs, their trace, the HW3
probe), so a submission written to deceive could try to forge or suppress them. Defences,
decided outside the student's processes:
- the records are sealed with a key the student's code never receives by any ordinary means
  (grader/records/seal.py), and the runtime checks at the end of every process that what it
  installed is still what runs (grader/vgpu/guard.py);
- facts that can be re-derived outside the student's process are (the HW3 model's outputs,
  recomputed from its saved weights: grader/harness/hw3_recompute.py);
- `scan` reads the submission's source (never runs it) and sorts what it finds into two kinds:
  *tampering* (reaching the grader's objects, settings or records; frames, gc, closures,
  class-hierarchy walks; replacing torch or builtins functions) withholds the assignment's
  automatic points for a person to review (`_integrity_review` in grader/scoring/score.py);
  *notes* (unusual but honest: reading environment variables, starting nvidia-smi, pickle,
  redirecting stdout, archives, helper modules) are shown to the instructor, never held.
"""
