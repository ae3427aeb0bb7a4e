"""Small helpers every layer may use: atomic file writes, text tails, the machine's GPUs.

Nothing here imports torch at module level or any other part of the grader, so the runtime
(grader/vgpu), the grading stages and the batch can all depend on it.
"""
