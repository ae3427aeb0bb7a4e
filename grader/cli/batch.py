"""`pdl-grade batch SUBMISSIONS --out DIR`: grade every submission in a folder (Moodle's
"download all submissions" or plain folders/zips) into DIR/gradebook.sqlite,
DIR/submissions/<student>/result.json and DIR/grades.csv.

Without --assignment, each Moodle download (or the folder) is graded for the assignments
most of its uploads hold, and the choice is said on stdout.

Exit status: 0 when every submission was graded, skipped, rejected (an archive that cannot be
unpacked safely: graded 0) or left for a person (nothing to grade found, or several versions:
no grade, its cells stay empty); 1 when some grading timed out or failed (listed at the end,
retried by the next batch); 2 when the batch could not start.
"""
from __future__ import annotations

import sys
from pathlib import Path

from grader.common.run_memory import set_run_memory
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S


def add_parsers(sub) -> None:
    batch = sub.add_parser("batch", help="grade a folder of submissions into a gradebook and grades.csv",
                           description=__doc__)
    batch.add_argument("submissions", help="folder of submission folders or .zip files "
                                           "(Moodle's 'download all submissions' works as is)")
    batch.add_argument("--out", required=True, help="folder for gradebook.sqlite, grades.csv "
                                                    "and submissions/<student>/result.json")
    batch.add_argument("--assignment", action="append", metavar="ID",
                       help="grade these for every upload, a missing one as 0 (repeatable; the "
                            "ids of rubrics/); default: those the uploads hold, per Moodle "
                            "download (an assignment most of its uploads hold), said on stdout")
    batch.add_argument("--workers", type=int, default=None,
                       help="submissions graded at once, each in its own process (default: "
                            "one per 2 cores the batch may use; each grading's runs and "
                            "threads then share its part of the cores)")
    batch.add_argument("--timeout", type=float, default=None,
                       help="seconds one submission may take before it is killed and recorded "
                            "as timed out (default 1800)")
    batch.add_argument("--regrade", action="store_true",
                       help="grade again even submissions unchanged since the last batch")
    batch.add_argument("--rubrics", default=None, help="folder of rubric YAML files")
    batch.add_argument("--check-timeout", type=float, default=DEFAULT_CHECK_TIMEOUT_S,
                       help="seconds one run of student code may take")
    batch.add_argument("--memory", metavar="SIZE", default=None,
                       help="memory one run of student code may use, e.g. 4G or 512M (default "
                            "6G; a grading runs up to 4 side by side, so workers x 4 x SIZE "
                            "should fit in the machine's memory)")
    batch.add_argument("--submission-times", metavar="[ASSIGNMENT=]FILE", action="append",
                       default=[],
                       help="when each student submitted, for the rubrics' late penalties: "
                            "Moodle's grading worksheet (CSV), Gradescope's "
                            "submission_metadata.yml, or a CSV of student,submitted_at (ISO "
                            "8601); repeatable, one per Moodle download (hw3=FILE: for the "
                            "uploads graded for hw3 only); default: "
                            "SUBMISSIONS/submission_metadata.yml if present")
    batch.add_argument("--timezone", metavar="ZONE", default=None,
                       help="IANA time zone (e.g. Europe/Berlin) of times written without one; "
                            "required for Moodle's worksheet")
    batch.add_argument("--overrides", metavar="FILE", default=None,
                       help="YAML/JSON of the instructor's overrides per student: {student key: "
                            "{item id: {points: x, comment: ...}, <assignment>.integrity: "
                            "{cleared: true}}}; a changed file re-scores without running code")
    batch.add_argument("--moodle-worksheet", action="append", default=[], metavar="[ASSIGNMENT=]FILE",
                       help="the grading worksheet downloaded from Moodle's assignment (Grading "
                            "action: Download grading worksheet): its rows are filled with the "
                            "grades and a feedback comment into DIR/moodle/<assignment>-worksheet.csv "
                            "for Moodle's 'Upload grading worksheet'; name the assignment when "
                            "the batch grades several (repeatable). Without it, "
                            "DIR/moodle/<assignment>.csv is written with Moodle's own header")
    batch.add_argument("--dry-run", action="store_true",
                       help="say what would be graded, re-scored, skipped or left for a person, "
                            "and with --backend slurm write each job's script (DIR/slurm-dry-run/) "
                            "and print its sbatch command; grade, submit and record nothing")
    cluster = batch.add_argument_group("SLURM (--backend slurm; see grader/cluster/config.py)")
    cluster.add_argument("--backend", choices=("local", "slurm"), default="local",
                         help="local: grade here, --workers at a time (default); slurm: one "
                              "SLURM job per submission on a shared filesystem (--workers "
                              "does not apply: the cluster decides)")
    cluster.add_argument("--partition", default=None, help="SLURM partition (e.g. gpu)")
    cluster.add_argument("--gpus-per-job", type=int, default=None,
                         help="GPUs each job asks for (--gres=gpu:N); default: the most the "
                              "graded rubrics' `gpus` fields need")
    cluster.add_argument("--time", default=None,
                         help="SLURM time limit per job, HH:MM:SS (default: --timeout plus "
                              "5 minutes, rounded up to minutes; the grader stops a grading "
                              "at --timeout itself)")
    cluster.add_argument("--slurm-config", default=None,
                         help="YAML file of SLURM settings (partition, time, cpus_per_task, "
                              "mem, account, qos, sbatch_args, job_names, setup lines such as "
                              "'source /shared/venv/bin/activate', python: the interpreter on "
                              "the nodes...); the options above override it")
    batch.set_defaults(handler=run)


def _worksheet_argument(text: str) -> tuple[str | None, str]:
    """"hw3=FILE" or "FILE" (a file named like "a=b.csv" is a file when it exists)."""
    assignment, sep, path = text.partition("=")
    if sep and assignment and not Path(text).exists() and "/" not in assignment:
        return assignment, path
    return None, text


def run(options) -> int:
    from grader.batch.pipeline import (DEFAULT_TIMEOUT_S, BatchError, BatchInterrupted,
                                       BatchOptions, run_batch)
    from grader.cli.grade import chosen_assignments
    workers_given = options.workers is not None
    if options.workers is None:
        from grader.common.cpu_share import default_workers
        options.workers = default_workers()
    if options.workers < 1:
        print("pdl-grade batch: --workers must be at least 1", file=sys.stderr)
        return 2
    backend = None
    if options.backend == "slurm":
        from grader.cluster import SlurmBackend, SlurmConfigError, SlurmSettings
        try:
            backend = SlurmBackend(SlurmSettings.load(options.slurm_config, partition=options.partition,
                                                      gpus_per_job=options.gpus_per_job, time=options.time))
        except SlurmConfigError as problem:
            print(f"pdl-grade batch: {problem}", file=sys.stderr)
            return 2
        try:
            backend.check()
        except SlurmConfigError as problem:
            if not options.dry_run:
                print(f"pdl-grade batch: {problem}", file=sys.stderr)
                return 2
            # A dry run submits nothing: it is how the settings are looked at off the cluster.
            print(f"pdl-grade batch: warning: {problem}", file=sys.stderr)
        from grader.cluster.backend import node_local
        local = node_local(Path(options.out))
        if local:
            print(f"pdl-grade batch: warning: --out {options.out} is under {local}, which on "
                  "a cluster is each node's own disk: the jobs would find neither the unpacked "
                  "uploads nor a place the batch reads results from; use a folder on the "
                  "file system the nodes share", file=sys.stderr)
    if not options.dry_run:
        _prepare_bytecode()
    try:
        set_run_memory(options.memory)
        batch_options = BatchOptions(
            assignments=(tuple(chosen_assignments(options.assignment, options.rubrics))
                         if options.assignment else None),
            workers=options.workers,
            timeout_s=options.timeout if options.timeout else DEFAULT_TIMEOUT_S,
            regrade=options.regrade, rubrics_dir=options.rubrics,
            check_timeout=options.check_timeout,
            submission_times=tuple(_worksheet_argument(text) for text in options.submission_times),
            timezone=options.timezone, overrides=options.overrides,
            moodle_worksheets=tuple(_worksheet_argument(text) for text in options.moodle_worksheet),
            dry_run=options.dry_run)
        # Said before the first grading that runs code, never where none does (a re-score).
        check = None if backend is not None else (lambda: machine_warning(
            options.workers, workers_given=workers_given, memory_given=options.memory is not None))
        summary = run_batch(Path(options.submissions), Path(options.out), batch_options,
                            backend=backend, before_grading=check)
    except BatchInterrupted as interrupted:
        print(f"\n{interrupted}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\ninterrupted before grading began; run the same command again", file=sys.stderr)
        return 130
    except (BatchError, ValueError) as problem:
        print(f"pdl-grade batch: {problem}", file=sys.stderr)
        return 2
    if not _same_place_as_progress():   # said once: the progress already showed it there
        for line in summary.assignment_choice:
            print(line)
    if options.dry_run:
        print("\n".join(summary.plan))
        _print_a_job_script(Path(options.out))
        return 0
    print(f"gradebook: {summary.gradebook}\ngrades:    {summary.grades_csv}")
    return 1 if summary.failed else 0


def machine_warning(workers: int, *, workers_given: bool, memory_given: bool,
                    cores: float | None = None, memory: int | None = None,
                    run_memory: int | None = None) -> str | None:
    """One line where the batch asks more of this machine than it has (README: keep workers x
    runs side by side x --memory inside its memory), or None: more gradings than cores, or
    the runs' memory limits, as many side by side as each grading's share of the cores lets
    it start, over the machine's memory. Compared exactly and said in sizes that differ, with
    what the instructor can change: --memory always, --workers where fewer exist.
    `cores`, `memory` (bytes) and `run_memory` default to this machine's and --memory's."""
    from grader.common.cpu_share import machine_cpus, runs_at_once, worker_share
    from grader.common.run_memory import LEAST_RUN_MEMORY_BYTES, run_memory_bytes
    cores = machine_cpus() if cores is None else cores
    memory = _machine_memory() if memory is None else memory
    size = run_memory_bytes() if run_memory is None else run_memory
    runs = runs_at_once(worker_share(workers, cores))
    needed = workers * runs * size
    who = (f"--workers {workers}" if workers_given
           else f"{workers} worker{'s' * (workers != 1)} (the default on {cores:g} cores)")
    problems = []
    if workers > cores:
        problems.append(f"{who} on {cores:g} core{'s' * (cores != 1)}: gradings will be slow "
                        f"(--workers {max(1, int(cores))} fits)")
    if memory and needed > memory:
        shown_needed, shown_memory = _two_sizes(needed, memory)
        limit = (f"--memory {_size(size, unit=True)}" if memory_given
                 else f"{_size(size)} (--memory's default)")
        fits = [w for w in range(workers - 1, 0, -1)
                if w * runs_at_once(worker_share(w, cores)) * size <= memory][:1]
        remedies = [f"--workers {w}" for w in fits]
        least = memory // (workers * runs)
        step = 2**29 if least >= 2**30 else 2**27       # 0.5G, else 128M steps
        if least // step * step >= LEAST_RUN_MEMORY_BYTES:
            remedies.append(f"--memory {_size(least // step * step, unit=True)}")
        remedy = (f"{' or '.join(remedies)} fits" if remedies else
                  f"even --memory {_size(LEAST_RUN_MEMORY_BYTES, unit=True)} does not fit: grade "
                  "on a machine with more memory")
        problems.append(f"{who} x {runs} run{'s' * (runs != 1)} side by side x {limit} = "
                        f"{shown_needed}, over this machine's {shown_memory} of memory: runs may "
                        f"be stopped for memory, their checks then fail ({remedy})")
    return "; ".join(problems) or None


def _machine_memory() -> int:
    import os
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _size(size: int, unit: bool = False) -> str:
    """6 GiB as "6G" (a --memory argument, `unit`) or "6 GiB"; below 1 GiB in MiB."""
    if size >= 2**30:
        number, suffix = f"{size / 2**30:.2f}".rstrip("0").rstrip("."), "G"
    else:
        number, suffix = f"{size / 2**20:.0f}", "M"
    return f"{number}{suffix}" if unit else f"{number} {suffix}iB"


def _two_sizes(larger: int, smaller: int) -> tuple[str, str]:
    """Both in GiB with as many decimals as it takes to tell them apart (24 over 23.5, never
    "24 GiB, over this machine's 24 GiB")."""
    for decimals in range(1, 4):
        texts = tuple(f"{n / 2**30:.{decimals}f}".rstrip("0").rstrip(".") + " GiB"
                      for n in (larger, smaller))
        if texts[0] != texts[1]:
            return texts
    return f"{larger / 2**20:.0f} MiB", f"{smaller / 2**20:.0f} MiB"


def _same_place_as_progress() -> bool:
    """Whether stdout goes where the progress (stderr) went: a terminal, or one log of both
    (`> log 2>&1`), where the choice of assignments the progress began with is not said again."""
    import os
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):   # streams that are no files (a test's)
        return False


def _print_a_job_script(out: Path) -> None:
    """A dry run's first job script in full: what a node would run."""
    from grader.batch.pipeline import DRY_RUN_FOLDER
    from grader.cluster.backend import SCRIPT_NAME
    scripts = sorted((out / DRY_RUN_FOLDER).glob(f"*/{SCRIPT_NAME}"))
    if scripts:
        print(f"\n{scripts[0]} (each job's script is beside its sbatch command's):\n")
        print(scripts[0].read_text(encoding="utf-8"))


def _prepare_bytecode() -> None:
    """Where torch's bytecode is missing, the grader compiles it once for the sandboxed runs
    before any worker starts (each would otherwise wait on the first); where it cannot (no
    sandbox, or the cache failed), the instructor is told once what every run will cost."""
    from grader.common.bytecode import shared_bytecode, torch_bytecode_warning
    slow_imports = torch_bytecode_warning()
    if slow_imports and shared_bytecode() is None:
        print(f"pdl-grade batch: warning: {slow_imports}", file=sys.stderr)
