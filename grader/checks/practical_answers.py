"""The practicals' answer sheets against what the grader measured on the same code.

Helpers shared by grader/checks/test_practical{4,5,6,10}.py: an answer together with the runs
it describes (a missing answer and a crashed run are both said, so the untouched template hears
about its TODOs and its empty sheet), GPUs and devices written the ways students write them,
and the hardware-independent consistency of a timing table.
"""
from __future__ import annotations

import ast
import re
import statistics
from pathlib import Path

from grader.answers.numbers import (column_unit, int_list_in, measured_range_in, not_available, quantity_in,
                                   whole_number_in)
from grader.checks.practical_measures import (assigned_constants, step_clock, step_ends,
                                              step_seconds)
from grader.checks.support import AnswerNotRead, explain, no_answer, not_found

# -- an answer and the runs it is compared with ----------------------------------------------


# A table whose rows are each measured by one script: (question, script) -> the method its row
# names. A row whose script did not run cannot be checked, the others still are: P5's timing
# table, half of it the single-GPU baseline (Part 1), is checked whatever the DataParallel script
# does (rubrics/README.md; a TA's audit: a complete single-GPU row beside the DataParallel TODO
# earned nothing).
ROW_OF_SCRIPT = {("timing.table", "practical5/practical5_single.py"): "single",
                 ("timing.table", "practical5/practical5_dp.py"): "dp"}


def answer_against(answers, qid: str, *runs):
    """The student's answer to `qid`, to be compared with `runs` (Observations of their code).

    Fails when the answer is missing (saying where it belongs, and why it was not read if the
    sheet had a problem with it) or when a run it is compared with did not complete (the
    answer cannot be checked against code that did not run); both reasons when both hold. A
    table whose rows are each one script's (ROW_OF_SCRIPT) is returned without the rows of the
    scripts that did not run, where a row of one that did is left to check."""
    broken = [run.problem() for run in runs if not run.ok]
    _require_answer(answers, qid, broken)
    if broken:
        rows = _rows_that_ran(answers.values[qid], qid, [run for run in runs if not run.ok])
        if rows:
            return rows
        raise AssertionError(explain(
            f"your answer to {qid} can be compared with what your code does",
            f"your code did not run to the end: {broken[0]}",
            "make the code run first; the answer is then checked against it"))
    return answers.values[qid]


def _rows_that_ran(value, qid: str, broken_runs) -> list | None:
    """The rows of table `value` that no run of `broken_runs` measured, where each broken run
    measures a row of its own (ROW_OF_SCRIPT) and a row is left; else None."""
    methods = {ROW_OF_SCRIPT.get((qid, run.script)) for run in broken_runs}
    ran = {method for (question, _), method in ROW_OF_SCRIPT.items() if question == qid} - methods
    if None in methods or not isinstance(value, list):
        return None
    kept = [row for row in value if isinstance(row, dict)
            and (named := set(method_rows([row]))) & ran and not named & methods]
    return kept or None


def answer_and_truth(answers, qid: str, truth, *runs):
    """(the student's answer to `qid`, what their code did), for an answer about one part of
    a run: `truth` is None when the runs never got to that part. A run that crashed after it
    does not matter. Fails when the answer is missing, or when there is no truth (the runs'
    problem is the cause); both reasons when both hold."""
    broken = [run.problem() for run in runs if not run.ok] if truth is None else []
    _require_answer(answers, qid, broken)
    if truth is None:
        raise AssertionError(explain(
            f"your answer to {qid} can be compared with what your code does",
            f"your code did not get that far: {broken[0]}" if broken else
            "your code never did what the question is about",
            "make the code run first; the answer is then checked against it"))
    return answers.values[qid], truth


def _require_answer(answers, qid: str, broken: list[str]) -> None:
    if qid in answers.values:
        return
    # An answer that is there but could not be read is quoted as such, never "no answer found".
    observed = not_found(answers, qid)
    if broken:
        observed += f"; and your code could not be run to compare it with: {broken[0]}"
    raise no_answer(answers, qid, observed)


# -- devices and GPUs as students write them -------------------------------------------------
_GPU_RE = re.compile(r"^(?:cuda|gpu|device)?\s*[:#]?\s*(\d+)$")
_TORCH_DEVICE_RE = re.compile(r"^device\(type='cuda',\s*index=(\d+)\)$")


def gpu_index(value) -> int | None:
    """A GPU's index from 0, "0", "cuda:0", "CUDA 0", "GPU 0", "gpu0", "device(type='cuda',
    index=0)"; None for anything else ("cpu", "cuda" without an index, text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if not isinstance(value, str):
        return None
    text = value.strip().strip("'\"`").strip().lower()
    found = _GPU_RE.match(text) or _TORCH_DEVICE_RE.match(text)
    if found:
        return int(found.group(1))
    # "cuda:0 (GPU 0)", "GPU 1, the second one": the GPU the text names, if it names one.
    return whole_number_in(text, gpu=True) if re.search(r"cuda|gpu|device", text) else None


def device_name(value) -> str | None:
    """The device as PyTorch prints it ("cuda:1", "cpu"), or None when it names no device."""
    if isinstance(value, str) and value.strip().strip("'\"`").strip().lower() == "cpu":
        return "cpu"
    index = gpu_index(value)
    return None if index is None else f"cuda:{index}"


def gpu_list(value) -> list[int] | None:
    """GPU indices from [0, 2], ["cuda:0", "cuda:2"], "0, 2", "[cuda:0, cuda:2]",
    "cuda:0 + cuda:2", a lone 0 or "cuda:0"; None when any part is not a GPU."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    elif isinstance(value, str):
        value = int_list_in(value)
    if not isinstance(value, (list, tuple)) or not value:
        return None
    indices = [gpu_index(v) for v in value]
    return None if any(i is None for i in indices) else indices


def whole_numbers(value) -> list[int] | None:
    """A list of whole numbers from [22, 22, 20], 64, "22, 22, 20", "22/22/20", "[22, 22, 20]";
    None when any part is not a whole number."""
    if isinstance(value, str):
        return int_list_in(value)
    if not isinstance(value, (list, tuple)):
        value = [value]
    found = []
    for item in value:
        if isinstance(item, str) and re.fullmatch(r"-?\d+(\.0*)?", item.strip()):
            item = float(item)
        if isinstance(item, bool) or not isinstance(item, (int, float)) \
                or not float(item).is_integer():
            return None
        found.append(int(item))
    return found or None


_INDEX_KEY = re.compile(r"^\s*(?:rank|gpu|cuda|device)?\s*[:#]?\s*(\d+)\s*$", re.IGNORECASE)


def rows_by(rows, column: str) -> dict:
    """A table's rows by one column's value (ints stay ints, words are lower-cased); the first
    row wins for a repeated key. Rows without that column are left out."""
    found = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get(column) is None:
            continue
        key = row[column]
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        elif isinstance(key, str):
            index = _INDEX_KEY.match(key)   # "0", "Rank 0", "GPU 0"; "dp (2 GPUs)" stays dp's
            key = int(index.group(1)) if index else key.strip().lower()
            word = re.match(r"[a-z][a-z_.]*", key) if isinstance(key, str) else None
            if word and word.group(0) != key:   # "dp (2 gpus)" is dp's row too
                found.setdefault(word.group(0), row)
        found.setdefault(key, row)
    return found


# The handouts' own labels of a timing table's rows (P5's "Single GPU" and "DataParallel"),
# letters and digits only, read as the sheet's method ids.
METHOD_LABELS = {"singlegpu": "single", "onegpu": "single", "1gpu": "single",
                 "dataparallel": "dp", "nndataparallel": "dp",
                 "distributeddataparallel": "ddp", "nnparalleldistributeddataparallel": "ddp"}


def method_rows(rows) -> dict:
    """A timing table's rows by method (rows_by), a row labelled as the handout labels it
    ("DataParallel", "Single GPU (1 GPU)") standing for its method id too."""
    found = rows_by(rows, "method")
    for key, row in list(found.items()):
        if isinstance(key, str):
            label = re.sub(r"[^a-z0-9]", "", re.sub(r"\([^()]*\)", "", key))
            if label in METHOD_LABELS:
                found.setdefault(METHOD_LABELS[label], row)
    return found


# Practical 6's comparison table: its aspects, the names a row may have exactly (the handout's
# and short forms; rows_by also keys a row by its name's first word, "processes (count)"), and
# the words that name it in a student's own row name (a TA's audit: "Number of processes", "How
# the data is split" were not taken for the handout's rows). Bare "gpu" is an exact name only:
# "Data split across GPUs" is about the data.
COMPARISON_ASPECTS = {
    "processes": {"names": ("processes", "process"), "words": ("process", "processes"),
                  "example": "Number of processes"},
    "data split": {"names": ("data split", "data", "split", "data splitting"),
                   "words": ("data", "batch", "split", "splitting", "scatter", "scattering"),
                   "example": "How the data is split"},
    "gpu usage": {"names": ("gpu usage", "gpu", "usage", "gpu utilization", "gpu utilisation",
                            "balance"),
                  "words": ("usage", "utilization", "utilisation", "balance", "load", "memory"),
                  "example": "GPU load"},
}


def _says_aspect(name: str, aspect: str) -> bool:
    words = COMPARISON_ASPECTS[aspect]["words"]
    return re.search(r"\b(?:" + "|".join(words) + r")\b", name, re.IGNORECASE) is not None


def comparison_rows(rows) -> dict:
    """The comparison table's rows by aspect: a row named as COMPARISON_ASPECTS names it
    (rows_by's keys, so "Processes (count)" too) first; else one whose whole name says the
    words of exactly one aspect ("Number of processes"); a name saying two ("Memory and batch
    split") is no aspect's row, never a guess."""
    found = {}
    for key, row in rows_by(rows, "aspect").items():
        for aspect, spec in COMPARISON_ASPECTS.items():
            if isinstance(key, str) and key in spec["names"]:
                found.setdefault(aspect, row)
    for row in rows if isinstance(rows, list) else []:
        name = row.get("aspect") if isinstance(row, dict) else None
        if not isinstance(name, str) or any(row is taken for taken in found.values()):
            continue
        said = [aspect for aspect in COMPARISON_ASPECTS if _says_aspect(name, aspect)]
        if len(said) == 1:
            found.setdefault(said[0], row)
    return found


def comparison_names(aspect: str) -> str:
    """The names a row of `aspect` is read under, for the feedback where none is found."""
    spec = COMPARISON_ASPECTS[aspect]
    first, *others = spec["names"]
    *words, last = spec["words"]
    return (f"'{first}' (or " + ", ".join(f"'{name}'" for name in others) + "), or in your own "
            f"words with {', '.join(words)} or {last} and none of the other rows' words, e.g. "
            f"'{spec['example']}'")


# -- what a run printed --------------------------------------------------------------------------
_NUMBER = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


def printed_numbers(stdout: str, pattern: str) -> list[float]:
    """Every number a line of the output gives for `pattern` (a regex with one {number})."""
    regex = re.compile(pattern.format(number=_NUMBER))
    return [float(m.group(1)) for m in regex.finditer(stdout or "")]


def step_times(run) -> tuple[list[float], float | None]:
    """(per-step times in s, total in s) of a training run, shown beside a student's timing
    table: on virtual GPUs the simulated clock's (what a student without a GPU is told to
    report; the script's own prints are this machine's wall clock there), the total of the
    steps after the first, as `pdl-grade run` says it; else as the run's own output says: its "step time X s"
    (or "time X ms") lines and its "total time: X s" line, or the gaps between the optimizer
    steps of rank 0 in the trace (no total then). For the reports only: facts about speed come
    from practical_measures.step_seconds."""
    if step_clock(run) == "simulated":
        seconds = step_seconds(run)
        return seconds, (sum(seconds) if seconds else None)
    seconds = printed_numbers(run.stdout, r"step \d+:.*?time:? {number} s\b")
    if not seconds:
        seconds = [ms / 1000 for ms in printed_numbers(run.stdout,
                                                      r"step \d+:.*?time:? {number} ms")]
    totals = printed_numbers(run.stdout, r"total time: {number} s")
    if seconds:
        return seconds, (totals[-1] if totals else None)
    stamps = [e["t"] for e in step_ends(run) if isinstance(e.get("t"), (int, float))]
    return [b - a for a, b in zip(stamps, stamps[1:])], None


def steps_of(run, rank: int = 0) -> int:
    """Training steps rank `rank` took in the run (step_ends: one optimizer per layer, each
    stepped after the same backward, takes one)."""
    return len(step_ends(run, rank))


def constant_in_source(path: Path, name: str, max_bytes: int = 200_000) -> int | None:
    """A top-level `NAME = <int>` of a Python file, read without running it (None when the file
    is missing, too large, not Python, or sets it otherwise)."""
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    value = assigned_constants(text, {name}).get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def command_line_options(path: Path, names, max_bytes: int = 200_000) -> dict[str, str]:
    """The script's own argparse options for the constants `names` (DEPTH -> "--depth"), where
    it reads them from its command line as integers with a number for default or none at all
    (`add_argument("--depth", type=int, default=6)`, or `dest="depth"`, or `required=True`):
    the grader sets such a constant there too, since a rewritten top-level constant does not
    reach an option's literal default (a TA's audit: an argparse script
    printed DEPTH=6's counts for the grader's DEPTH=20 and lost Task 5's printed counts)."""
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return {}
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    wanted = {name.lower(): name for name in names}
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant)
                 and isinstance(a.value, str) and a.value.startswith("--")]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        typed = isinstance(keywords.get("type"), ast.Name) and keywords["type"].id == "int"
        # Only where the rewritten constant cannot reach the value: a default written as a
        # number, or an option the script requires. A default of None (the script falls back
        # to its constant) or of the constant itself is left alone: the command line is the
        # script's, and one reading sys.argv itself would read the grader's option.
        default = keywords.get("default")
        literal = isinstance(default, ast.Constant) and isinstance(default.value, int) \
            and not isinstance(default.value, bool)
        required = isinstance(keywords.get("required"), ast.Constant) and \
            keywords["required"].value is True
        if not flags or not typed or not (literal or required):
            continue
        dest = keywords.get("dest")
        key = (dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str)
               else flags[0][2:].replace("-", "_")).lower()
        if key in wanted and wanted[key] not in found:
            found[wanted[key]] = flags[0]
    return found


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


# -- timing tables: consistency that holds on any hardware ------------------------------------
TOTAL_LOWER = 0.5   # a run of S steps cannot take less than half of S typical steps
TOTAL_FLAG = 5.0    # more than 5x S steps: a long warm-up step, or a step time in ms


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


# A unit a cell names after a number ("35-40 ms", "842MiB", "842 (ms)"), of any kind the tables measure in.
_A_UNIT = re.compile(r"\d\s*(?:[(\[]\s*(?:in\s+)?)?(ms|msec|s|secs?|seconds?|µs|us|mib|mb|gib|gb|kib|kb|bytes?|%)(?![a-z])", re.IGNORECASE)


def holds_a_number(cell, unit: str | None = None) -> bool:
    """A table cell written with a number the sheet's reader could not take ("56 ms or so",
    a form it does not know): for a person, as an unread single answer is, never a wrong value
    (adv55: such cells scored 0). A cell without a number ("n/a", "TODO") is no answer; one
    wrong whatever it means is no wait either: a negative reading ("-5 to 10 %"), a unit of
    another kind than the column's `unit` ("35-40 ms" as a percentage)."""
    if not isinstance(cell, str) or re.search(r"\d", cell) is None or not_available(cell):
        return False
    if re.search(r"(?<![\w.])[-−]\s*\d", cell):
        return False
    return unit is None or all(quantity_in("1 " + written, unit) is not None for written in _A_UNIT.findall(cell))


def unread_cells_wait(problems: list[str], held: list[str], qid: str, expected: str, where: str) -> None:
    """AnswerNotRead where a table's only problems are `held` cells (holds_a_number): its
    points wait for a person; a cell missing or wrong beside them fails the table as before."""
    if held and not problems:
        raise AnswerNotRead(explain(expected, "; ".join(held) + " (the instructor reads it)", where), qid)


def incomplete_rows(rows: dict, methods: list[str], columns: list[str],
                    missing: dict[str, str] | None = None, held: list[str] | None = None) -> list[str]:
    """What a timing table lacks: a row per method, with a positive number in every column.
    `missing`: what to say of a method's missing row (why it is missing, what to add), where
    the caller knows more than "no row with method: ...". `held`: where given, a cell with a
    number not read is said there, not among the problems (unread_cells_wait)."""
    problems = []
    for method in methods:
        row = rows.get(method)
        if row is None:
            problems.append((missing or {}).get(method) or f"no row with method: {method}")
            continue
        for column in columns:
            number = _number(row.get(column))
            if number is None and held is not None and holds_a_number(row.get(column), column_unit(column)):
                held.append(f"{method}: {column} is {row[column]!r}, not read as a number")
            elif number is None:
                problems.append(f"{method}: {column} is {row.get(column, 'empty')!r}, not a number")
            elif number <= 0:
                problems.append(f"{method}: {column} is {row[column]:g}, not a positive number")
    return problems


def total_disagreements(rows: dict, steps: dict[str, int | None]) -> tuple[list[str], list[str]]:
    """(problems, flags) of total_time_s against steps x step_time_s (both in seconds, as the
    handout's table has them), for the methods whose number of steps is known: the total must
    be at least TOTAL_LOWER of steps x step time (it covers every step); above TOTAL_FLAG times
    it is only flagged (warm-up varies with the hardware)."""
    problems, flags = [], []
    for method, count in steps.items():
        row = rows.get(method) or {}
        step_s, total_s = _number(row.get("step_time_s")), _number(row.get("total_time_s"))
        if not count or not step_s or not total_s or step_s <= 0 or total_s <= 0:
            continue
        expected_s = count * step_s
        ratio = total_s / expected_s
        if ratio < TOTAL_LOWER:
            problems.append(
                f"{method}: a total of {total_s:g} s for {count} steps of {step_s:g} s "
                f"({expected_s:.4g} s): the total is {ratio:.2g}x of that, less than every "
                "step together (both in seconds)")
        elif ratio > TOTAL_FLAG:
            flags.append(
                f"{method}: total {total_s:g} s is {ratio:.3g}x of {count} steps x {step_s:g} "
                "s: a long warm-up step, or the step time in ms?")
    return problems, flags


def per_rank_line(values: dict, column: str) -> str:
    """{0: "cuda:0", 1: "cuda:1"} -> "rank 0: gpu cuda:0; rank 1: gpu cuda:1": a per-rank table
    as one line, so a sheet and a run compare equal exactly when every rank matches and no
    other rank is listed (ranks that are not numbers sort last)."""
    order = sorted(values, key=lambda k: (not isinstance(k, int), str(k)))
    return "; ".join(f"rank {r}: {column} {values[r]}" for r in order)


# -- nvidia-smi's readings, as students copy them ----------------------------------------
USAGE_COLUMNS = ["utilization_percent", "memory_mib"]


def usage_rows(rows) -> dict:
    """An nvidia-smi table's rows by GPU index ("0", "cuda:0" and "GPU 0" are GPU 0)."""
    found = rows_by(rows, "gpu")
    return {gpu_index(k) if gpu_index(k) is not None else k: row for k, row in found.items()}


# What a student without nvidia-smi (virtual GPUs have none) honestly writes for utilization is
# numbers.not_available's (the sheet reader tells such a cell from one it could not read).


def usage_table_problems(rows: dict, held: list[str] | None = None) -> list[str]:
    """What an nvidia-smi table lacks: at least 2 GPUs, utilization 0-100 % (or said not to be
    available: virtual GPUs have no nvidia-smi, and a made-up 0 % must not be the only way to
    a complete table), memory > 0 MiB. `held`: as incomplete_rows's."""
    gpus = {k: row for k, row in rows.items() if isinstance(k, int)}
    problems = [] if len(gpus) >= 2 else [f"rows for {len(gpus)} GPU(s); the run used 2 or "
                                          "more"]
    for gpu, row in sorted(gpus.items()):
        util, memory = row.get("utilization_percent"), row.get("memory_mib")
        if not_available(util):
            pass
        elif held is not None and holds_a_number(util, "percent") and measured_range_in(util, "percent") is None:
            held.append(f"GPU {gpu}: utilization_percent is {util!r}, not read as a percentage")
        elif not isinstance(util, (int, float)) or isinstance(util, bool) or not 0 <= util <= 100:
            problems.append(f"GPU {gpu}: utilization_percent is {util!r}{_utilization_wrong(util)}")
        if held is not None and holds_a_number(memory, "mib"):
            held.append(f"GPU {gpu}: memory_mib is {memory!r}, not read as MiB")
        elif not isinstance(memory, (int, float)) or isinstance(memory, bool) or memory <= 0:
            problems.append(f"GPU {gpu}: memory_mib is {memory!r}, not a positive number")
    return problems


def _utilization_wrong(util) -> str:
    """What is wrong with a utilization the sheet could not read as a percentage 0-100, and what
    was expected (a range within 0-100 is read as its middle: sheet._cell)."""
    expected = ("expected one reading from 0 to 100 (38, 38 %, or a range within 0-100 such as "
                "35-40 %), or n/a where no nvidia-smi could be run")
    span = measured_range_in(util, "percent") if isinstance(util, str) else None
    if span is not None and span.low > span.high:
        return f": a range from high to low: {expected}"
    if span is not None or isinstance(util, (int, float)) and not isinstance(util, bool):
        return f", outside 0-100: {expected}"
    return f": {expected}"


def checked_usage_table(answers, reported_values, qid: str, method: str, *runs,
                        flag=None) -> dict:
    """The answer sheet's nvidia-smi table (`qid`) by GPU index, recorded for the reports; the
    check fails unless it is complete (usage_table_problems) and each of `runs` (the student's
    scripts the readings are of) trained: readings of training that never happens were not
    observed, and a table filled in beside an untouched template earns nothing."""
    trained = all(run.of("step") for run in runs) or None
    rows = usage_rows(answer_and_truth(answers, qid, trained, *runs)[0])
    reported_values[qid] = {str(k): {c: row.get(c) for c in USAGE_COLUMNS}
                            for k, row in rows.items()}
    held = []
    problems = usage_table_problems(rows, held)
    if flag is not None and any(not_available(row.get("utilization_percent")) for row in rows.values()):
        flag(f"{qid}: utilization given as not available (no nvidia-smi where it was measured?): "
             "the handout asks for nvidia-smi's readings on a GPU node")
    expected = (f"nvidia-smi's readings during the {method} run: a row per GPU it used, with the "
                "utilization in % and the memory used in MiB")
    assert not problems, explain(expected, "; ".join(problems), answers.where_to_answer(qid))
    unread_cells_wait(problems, held, qid, expected, answers.where_to_answer(qid))
    return rows
