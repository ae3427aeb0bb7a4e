"""`pdl-grade batch`: grade a folder of submissions (Moodle's "download all submissions" or
plain folders/zips) into a crash-safe SQLite gradebook, per-student folders and the class's files.

Modules: `inputs` finds, identifies and safely unpacks submissions; `gradebook` is the SQLite
record; `scheduler` runs gradings in killable child processes (grader/cluster runs them as
SLURM jobs instead); `pipeline` ties them together around grader/grading's stages;
`published` keeps DIR/submissions/ in step with the gradebook; `grades_csv`, `class_page` and
`progress` are the outputs (`people` makes one row of a person's uploads of several Moodle
downloads); `submission_times` reads the LMS's submission times (late
penalties). The CLI is grader/cli/batch.py.
"""
