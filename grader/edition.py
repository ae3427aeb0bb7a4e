"""Which grader this is: the staff's (this checkout) or the students' kit.

scripts/build_student_kit.py sets STUDENT_KIT = True in the kit it builds. The kit carries no
reference solutions and no staff guidance (the rubrics' `guidance:` is stripped), and its
grader never writes the staff's view, instructor.md: that format is not offered there
(grader/reports/formats.py), nor the staff's `pdl-grade batch`.
"""
STUDENT_KIT = False

# Parts of the grader package (relative to grader/) that are the staff's alone: left out of
# the kit (grader/student_kit.py), and of the bytecode the sandboxed runs can read
# (grader/common/bytecode.py).
STAFF_ONLY = ("batch", "cluster", "student_kit.py", "reports/instructor.py",
              "reports/templates/instructor.md.j2", "data")
