"""Records a run leaves behind, as the grader reads them back: sealed observation files
(`seal`) and the safe reading of files in folders student code could write to
(`untrusted_files`).

The lowest layer of the grader: the runtime inside the student's process (grader/vgpu, the
HW3 probe) imports it to seal what it writes, the harness to verify it. It imports nothing
of the grader; the scan and the hold policy (grader/integrity) sit above it.
"""
