"""What a value probe's perturbation does to a pass: each `perturbed` record's `kind`.

The vocabulary the writer (grader/vgpu/perturb.py, in the run) and the reader
(grader/checks/value_probe.py, in the checks process) share. It lives apart from perturb.py,
which imports torch, so that the checks process need not: `import torch` cost Practical 10's
checks process about 2.5 of its 4 CPU-seconds.
"""
PARAMETERS, ROWS, NOISE = "parameters", "rows", "noise"
