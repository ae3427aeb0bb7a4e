"""`pdl-grade batch`: grade a folder of submissions (Moodle's "download all submissions" or
plain folders/zips) into a crash-safe SQLite gradebook, per-student result.json files and a
grades.csv for Moodle.

Modules: `inputs` finds, identifies and safely unpacks submissions; `gradebook` is the SQLite
record; `scheduler` runs gradings in killable child processes; `runner` ties them together;
`progress` and `csv_export` are the outputs; `submission_times` reads the LMS's submission
times (late penalties); `command` is the CLI.
"""
