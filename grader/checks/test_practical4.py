"""Practical 4: data and model parallelism as concepts (practical4/concepts.py).

The script runs as the handout runs it (`python concepts.py`): on 2 GPUs with the batch of
64, and on 1 GPU (Part 3 must say it needs 2 GPUs); and, for no point, on 2 GPUs with a batch
of 63 that two chunks cannot share evenly (torch.chunk: 32 + 31, and the combined output is
still the full one), which tells a student whose split would drop a row. Each part is judged
by what it recorded, so a part that ran keeps its points when a later part crashes.

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import math
import re

import pytest

from grader.checks.practical_answers import answer_and_truth, device_name
from grader.checks.practical_measures import (comparisons, concatenations, evidence,
                                              forward_passes, match_rows, recorded_rows,
                                              rows_of)
from grader.checks.support import explain
from grader.checks.too_few_gpus import ended_by_exit, too_few_gpus_line

SCRIPT = "practical4/concepts.py"
BATCH, IN_DIM, HIDDEN, OUT_DIM, CHUNKS = 64, 1000, 2000, 1000, 2
# Two chunks of a batch of 63: 32 + 31 rows (torch.chunk). The handout's batch is 64, so this
# run earns no point; it tells a student whose split would drop a row (practical4.uneven_batch).
UNEVEN = 63
# How far a chunk's output's sum may be from that of Part 1's rows it stands for, relative to
# their norm and size (`stood_for`): float rounding only (other kernel tilings on a real GPU,
# about 1e-6 of the norm), tight enough that passes on other data tried one after another are
# unlikely to land on it (a pass on 32 random rows: about 1 in 10^5 for a given chunk).
SUM_ROUNDING = 1e-5
LAYER1_PARAMS = IN_DIM * HIDDEN + HIDDEN
LAYER2_PARAMS = HIDDEN * OUT_DIM + OUT_DIM


def run_spec(batch=BATCH, gpus=2):
    return dict(script=SCRIPT, gpus=gpus, sets={"BATCH_SIZE": batch} if batch != BATCH else None)


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs):
    runs.prefetch(run_spec(), run_spec(UNEVEN), run_spec(gpus=1))


@pytest.fixture(scope="module")
def two_gpus(runs):
    return runs.script(**run_spec())


# The template's Part 2 TODO, as it stops the script before Part 3 (student_template/).
PART2_TODO = ('    raise NotImplementedError(\n'
              '        "TODO (Practical 4 Part 2): split the batch with torch.chunk, run the model "\n'
              '        "on each chunk and torch.cat the outputs into final_output; see the Practical 4 "\n'
              '        "handout, Part 2 (simulated data parallelism)")\n')
PART3_TODO = '"TODO (Practical 4 Part 3)'
PART2_STAND_IN = "    final_output = output  # the grader's stand-in for Part 2, left to do: Part 3 is reached\n"


def stopped_at_todo(run, part: int) -> bool:
    """Whether `run` stopped at the template's TODO of Part `part`, left as the template has it."""
    return any(e.get("type") == "NotImplementedError"
               and f"Practical 4 Part {part}" in str(e.get("message"))
               for e in run.of("exception"))


def past_part2_todo(runs, submission, run, gpus: int):
    """`run`, or, where it stopped at Part 2's TODO left as the template has it, the same
    script on `gpus` GPUs with a stand-in for Part 2, so that a Part 3 written before Part 2 is
    graded as a TA reading it would (an instructor's audit: a correct Part 3 scored 0/4, and
    its one-GPU message 0/0.5, behind the TODO). Part 2 earns nothing from the stand-in."""
    if not stopped_at_todo(run, 2):
        return run
    try:
        source = (submission / SCRIPT).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return run
    if source.count(PART2_TODO) != 1 or PART3_TODO in source:
        return run   # Part 3 still the template's TODO too: the stop at Part 2 says it all
    return runs.script(**run_spec(gpus=gpus), edits=((PART2_TODO, PART2_STAND_IN),))


def part3_not_run(run, missing: str) -> str:
    """What the checks of Part 3 say where its layers never ran: with the script's last line
    of output on the handout's 2-GPU node, which often says why (a TA's audit: a guard
    `device_count() > 2` printed 'Model parallelism requires at least 2 GPUs.')."""
    lines = [line.strip() for line in (run.stdout or "").splitlines() if line.strip()]
    if not lines:
        return missing
    return (f"{missing}; on the handout's node of 2 GPUs the script ran to its end, its last "
            f"line of output: {lines[-1][:200]!r}")


@pytest.fixture(scope="module")
def part3_run(runs, submission, two_gpus):
    """The run Part 3 is judged on: the handout's 2-GPU run, past Part 2's TODO."""
    return past_part2_todo(runs, submission, two_gpus, 2)


# -- what each part recorded ----------------------------------------------------------------------


def full_batch_pass(run, batch):
    """Part 1: the first forward pass of the whole model on the whole batch."""
    return next((p for p in forward_passes(run) if rows_of(p["batch"]) == batch
                 and rows_of(p["out_shape"]) == batch), None)


def _after_part1(run, batch):
    """The forward passes after Part 1's of Part 1's model (all of them where Part 1's is not
    found). Of its model: a module of the same class (the model, a deepcopy or replica of it
    on another GPU), not any module with a parameter: one that ignored its chunk and returned
    slices of Part 1's output had been Part 2's chunk passes (a red team's adv36 F2, 6.1 ->
    8.5). The same class object where the records say which (`class_id`), not only its name:
    a class of the script's own named `Sequential` is another class (eng_p4e)."""
    passes = forward_passes(run)
    full = full_batch_pass(run, batch)
    if full not in passes:
        return passes
    return [p for p in passes[passes.index(full) + 1:] if _same_class(p, full)]


def _same_class(forward, full) -> bool:
    if forward.get("class_id") is not None and full.get("class_id") is not None:
        return forward["class_id"] == full["class_id"]
    return not (forward["module"] and full["module"]) or forward["module"] == full["module"]


def all_chunk_passes(run, batch):
    """Every forward pass on fewer rows than the batch after Part 1's that returned a tensor:
    Part 2's, and those of any repetition of it (a timing loop); their outputs are the chunks'
    outputs a combination may join. A call that raised, or a module that returned no tensor (a
    float), ran no chunk (a red team's adv36 F1 made such a call Part 2's chunk)."""
    return [p for p in _after_part1(run, batch)
            if (rows_of(p["batch"]) or batch) < batch and p["out_shape"] is not None]


def chunk_passes(run, batch):
    """Part 2: one run of its chunks, the first run of forward passes on fewer rows than the
    batch after Part 1's. A script that runs Part 2 again (timing it: `torch.cat([model(c) for
    c in chunks])` 10 times) is judged on one of them, never on their sum (a red team's adv31
    H2: "22 forward pass(es) on parts of the batch (704 of the batch's 64 rows)"). The run
    ends once its rows add up to the batch, or at the next pass on the batch's rows or more;
    a pass on rows the run already holds (a chunk run again) is a repetition, not one more
    chunk. Three chunks, or chunks that leave rows out, are still that. A pass that returned no
    tensor (it raised) is none (`all_chunk_passes`)."""
    found = []
    for forward in _after_part1(run, batch):
        if (rows_of(forward["batch"]) or batch) >= batch:
            if found:
                break
            continue
        if forward["out_shape"] is None:
            continue
        if forward["rows_in"] is not None and any(forward["rows_in"] == other["rows_in"]
                                                  for other in found):
            continue   # the same chunk again
        found.append(forward)
        if sum(rows_of(p["batch"]) for p in found) >= batch:
            break
    return found


def part3_layers(run, with_stopped: bool = True):
    """Part 3's layer1 and layer2 (parameter counts of Linear(1000, 2000) and
    Linear(2000, 1000)) -> their devices, whether they are loose layers (the handout's way)
    or held by a module of the student's (a class with self.layer1 and self.layer2). A whole
    model on one GPU is Part 1's, or a replica of it a Part 2 of real data parallelism runs on
    each GPU: left out, unless nothing else is there (then the last one, after Part 1's, is
    Part 3's, all on one GPU).

    As their forward passes found them; `with_stopped`: a layer that never ran is taken
    where the script held it when an error stopped it (layer2 on cuda:1, the script stopped
    by layer1's input left on the CPU: a TA gives the placement its points)."""
    found = _part3_devices(run.of("placement", 0))
    if with_stopped:
        stopped = _part3_devices(run.of("placement_at_error", 0))
        for name, devices in stopped.items():
            found.setdefault(name, devices)
    return found


def _part3_devices(events) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    whole = []
    for event in events:
        layers = event.get("layers", [])
        sizes = {layer.get("params") for layer in layers}
        devices = {d for layer in layers for d in _devices(layer)}
        if {LAYER1_PARAMS, LAYER2_PARAMS} <= sizes and len(devices) == 1:
            whole.append(layers)
            continue
        _add_part3_devices(found, layers)
    if not found and len(whole) > 1:
        _add_part3_devices(found, whole[-1])
    return found


def _devices(layer: dict) -> list[str]:
    """A placement's layer's device(s): one, or a list where its parameters are spread."""
    device = layer.get("device")
    return [str(d) for d in device] if isinstance(device, list) else [str(device)]


def _add_part3_devices(found: dict, layers: list[dict]) -> None:
    for layer in layers:
        name = {LAYER1_PARAMS: "layer1", LAYER2_PARAMS: "layer2"}.get(layer.get("params"))
        if name:
            found.setdefault(name, set()).update(_devices(layer))


def activation_moves(run, batch=BATCH):
    """Moves of Part 3's activation ([batch, HIDDEN]) from one GPU to another."""
    return [e for e in run.copies(0) if _moves_the_activation(e, batch)]


def _moves_the_activation(event: dict, batch: int) -> bool:
    return str(event.get("src", "")).startswith("cuda") \
        and str(event.get("dst", "")).startswith("cuda") and event.get("src") != event.get("dst") \
        and event.get("shape") == [batch, HIDDEN]


def moves_per_forward(run, batch=BATCH) -> list[list[dict]]:
    """Part 3's moves of the activation, one list per forward pass that moved it: those made
    since the previous pass that gave [batch, OUT_DIM] (layer2's, or a two-GPU module's) up to
    this one's end; moves after the last such pass count with it. A script that runs Part 3's
    forward again (timing it: 3 warm-up and 10 timed passes) moves the activation once per
    pass, not 13 times (a red team's adv31 H2); a pass that moves it there and back again
    still shows every move."""
    forwards, moves = [], []
    for event in run.events:
        kind = event.get("event")
        if kind in ("to", "transfer") and event.get("rank") == 0 and \
                (kind == "transfer" or event.get("copied")) and _moves_the_activation(event, batch):
            moves.append(event)
        elif kind == "forward_out" and event.get("rank", 0) == 0 and moves and \
                event.get("shape") == [batch, OUT_DIM]:
            forwards.append(moves)
            moves = []
    if moves and forwards:
        forwards[-1] = forwards[-1] + moves
    elif moves:
        forwards.append(moves)
    return forwards


def _one_move_right(moves: list[dict]) -> bool:
    return len(moves) == 1 and moves[0].get("src") == "cuda:0" and moves[0].get("dst") == "cuda:1"


def _moves_said(moves: list[dict]) -> str:
    return ", ".join(f"{m['src']} -> {m['dst']} at {m.get('site')}" for m in moves)


def part3_output(run, batch=BATCH):
    """Part 3's output: the last forward pass after Parts 1 and 2 that gives [batch, OUT_DIM]:
    layer2's (the handout's loose layers) or the student's two-GPU module's."""
    passes = forward_passes(run)
    earlier = all_chunk_passes(run, batch) or [full_batch_pass(run, batch)]
    start = passes.index(earlier[-1]) + 1 if earlier[-1] in passes else 0
    found = [p for p in passes[start:] if p["out_shape"] == [batch, OUT_DIM]]
    return found[-1] if found else None


def combined_against_full(run, batch):
    """Part 2's verdict on the chunks' combined output against Part 1's output, row by row:
    (True, text) when equal and in order, (False, cause) otherwise, None when no combination of
    the chunks' outputs into `batch` rows was recorded. The combination is torch.cat's of the
    chunk passes' outputs (`chunk_concatenations`), or a tensor of `batch` rows the script
    filled with them (`filled_with_chunks`: `final_output[a:b] = out`, copy_, index_copy_), its
    rows in the order they fill it, however the script compares it with Part 1's output (a
    TA's audit29 D1: `(a - b).abs().max() < 1e-6`), or whether it does; or, where neither was
    recorded, the tensor of its own the script compares with Part 1's output (the template's
    torch.allclose(final_output, output))."""
    full = full_batch_pass(run, batch)
    if not full:
        return None
    cats = chunk_concatenations(run, batch)
    fills = filled_with_chunks(run, batch)
    if not full["rows_out"]:
        if full["rows_dropped"] or full["rows_out_dropped"]:
            return False, part1_unrecorded(run, batch)   # spent before Part 1: nothing excused
        return _combined_unrecorded(cats, fills, run, batch)
    if chunks_unrecorded(run, batch):
        return False, chunks_unrecorded(run, batch)   # spent after Part 1: nothing excused
    joined = [(f"{joined_by(c)} at {c.get('site')}", c["rows"]) for c in cats if c.get("rows")] \
        + [(f"the tensor filled with the chunks' outputs at {f['site']}", f["rows"])
           for f in fills if f["rows"] is not None] \
        or compared_with_full(run, batch)
    if not joined and (cats or fills):
        return _combined_unrecorded(cats, fills, run, batch)
    verdicts = []
    for what, rows in joined:
        where = match_rows(rows, full["rows_out"])
        if where == list(range(batch)):
            if returned_by_chunks(run, batch, rows):
                return True, f"{what} gives the full output, in order"
            where = "not returned"
        verdicts.append((what, where))
    if not verdicts:
        return None
    what, where = verdicts[-1]
    if where == "not returned":
        return False, (f"{what} has the full-batch output's rows, but they are not the rows the "
                       "model's passes on the chunks returned (those are no rows of Part 1's "
                       "output): the chunks' outputs were overwritten after their passes (through "
                       "numpy, or a copy of Part 1's output), which combines no chunk's output")
    if None not in where and sorted(where) == list(range(batch)):
        first_wrong = next(i for i, w in enumerate(where) if w != i)
        return False, (f"{what} has all the rows of the full-batch output, but not "
                       f"in order: its row {first_wrong} is the full output's row "
                       f"{where[first_wrong]} (the chunks' outputs are joined in another order "
                       "than the chunks)")
    missing = [i for i, w in enumerate(where) if w is None]
    return False, (f"{what} gives rows that are not the full-batch output's: "
                   f"{len(missing)} of its {batch} rows ({_ranges(missing)}) match no row of "
                   "Part 1's output (another model, other weights or other data?)")


def returned_by_chunks(run, batch, rows) -> bool:
    """Whether every one of `rows` is a row a model's pass on a chunk returned (any of
    them: a repetition of Part 2, a pass on a few rows to try the model). A combination must
    hold the rows the chunks' passes returned, not only Part 1's: numpy's writes are not
    recorded, so the chunk outputs' host arrays overwritten with Part 1's rows and then joined
    (a red team's adv32 F1), or Part 1's output copied by numpy or `.tolist()` into a tensor of
    its own and compared (F2), had Part 1's rows while the chunks ran on other data (zeros).

    A pass whose output's rows the budget dropped (`rows_out_dropped`) returned the rows it
    stands for (`stood_for`): Part 1's rows whose sum its output's has, or none. Any pass it
    dropped had excused as many forged rows, so passes on other data after Part 1 that spent the
    budget earned chunks on other data 9.5 and 8.5 (eng_p4e; 6.1 now); a pass that returned no
    tensor (a call that raised) is no chunk pass (adv36 F1)."""
    full = full_batch_pass(run, batch)
    returned = []
    for forward in all_chunk_passes(run, batch):
        if forward.get("rows_out"):
            returned += forward["rows_out"]
        elif forward.get("rows_out_dropped"):
            returned += stood_for(forward, (full or {}).get("rows_out")) or []
    return None not in match_rows(rows, returned)


def stood_for(forward, known) -> list | None:
    """The rows of `known` (Part 1's output's, recorded) that a pass whose output's rows were
    not recorded stands for: the run of as many consecutive rows whose sums add up nearest to
    its output's sum (recorded whatever the budget), where that is equal up to float rounding;
    None where none is (it ran on other data). The nearest, not the first: two runs of 32 rows
    of 1,000 numbers may add up to within rounding's bound of each other."""
    count, total = rows_of(forward.get("out_shape")), forward.get("sum_out")
    if not count or not isinstance(total, (int, float)) or isinstance(total, bool):
        return None
    best, nearest = None, math.inf
    for start in range(len(known or []) - count + 1):
        rows = known[start:start + count]
        summed = sum(row[0] for row in rows)
        norm = math.sqrt(max(sum(row[1] for row in rows), 0.0))
        off = abs(summed - total)
        if off < nearest and off <= SUM_ROUNDING * (norm + max(abs(summed), abs(total))) + 1e-9:
            best, nearest = rows, off
    return best


def _combined_unrecorded(cats, fills, run, batch):
    """The verdict where the rows were not recorded (the run spent the records of rows on
    other passes: rows.py's budget): a torch.cat of the chunk passes' outputs in the chunks'
    order, or a tensor filled with them in that order, is taken as the combination, as its
    rows cannot be compared; None without one."""
    # In the chunks' order: the outputs of one run of them (Part 2's, or a repetition's).
    every, count = [p.get("storage_out") for p in all_chunk_passes(run, batch)], \
        len(chunk_passes(run, batch))
    orders = [every[i:i + count] for i in range(0, len(every) - count + 1, count)] if count \
        else []
    for cat in cats:
        if cat.get("storages") in orders:
            return True, (f"{joined_by(cat)} at {cat.get('site')} joins the chunks' outputs in the "
                          "chunks' order (its rows were not recorded, so not compared)")
    for fill in fills:
        if fill["sources"] in orders:
            return True, (f"the tensor filled at {fill['site']} holds the chunks' outputs in "
                          "the chunks' order (its rows were not recorded, so not compared)")
    return None


def filled_with_chunks(run, batch):
    """The tensors of `batch` rows the script filled row by row with the outputs of the model's
    passes on the chunks (grader/vgpu/rows.py's `fill` records: `final_output[a:b] = out`,
    `final_output[a:b].copy_(out)`, `final_output.index_copy_(0, rows, out)`, a chunk's output
    or a copy or part of it), each as {site, rows, sources}: `rows` those it holds, in order,
    as the fills left them (None for a row no chunk's output filled: left as allocated, or
    filled with another tensor, such as Part 1's output cut into pieces, which combines
    nothing), or None where a fill's rows were not recorded; `sources` the chunk outputs'
    storages in the order of the rows they fill. A tensor no chunk's output filled is none."""
    outputs = {p.get("storage_out") for p in all_chunk_passes(run, batch)} - {None}
    known = recorded_rows(run)
    tensors: dict = {}
    for fill in run.of("fill", 0):
        at, total = fill.get("at"), fill.get("rows_total")
        if total != batch or not isinstance(at, list) or fill.get("storage") is None:
            continue
        slots = tensors.setdefault(fill["storage"], {"slots": [None] * batch, "site": None,
                                                     "unknown": False})
        rows = fill.get("rows")
        if rows is None and isinstance(fill.get("rows_as"), str):
            rows = known.get(fill["rows_as"])
        mine = fill.get("source") in outputs
        if mine:
            slots["site"] = fill.get("site")
        if rows is None or len(rows) != len(at):
            slots["unknown"] |= mine
            rows = [None] * len(at)
        for position, row in zip(at, rows):
            if isinstance(position, int) and 0 <= position < batch:
                slots["slots"][position] = (fill.get("source"), row) if mine else None
    found = []
    for filled in tensors.values():
        if filled["site"] is None:
            continue   # no chunk's output went into it
        sources = []
        for slot in filled["slots"]:
            if slot is not None and (not sources or sources[-1] != slot[0]):
                sources.append(slot[0])
        rows = None if filled["unknown"] else [slot[1] if slot else None
                                               for slot in filled["slots"]]
        found.append({"site": filled["site"], "rows": rows, "sources": sources})
    return found


def joined_by(concatenation: dict) -> str:
    """What made a `concat` record, for the feedback: torch.cat (or torch's vstack, stack: the
    verdict is the same), numpy's join of host copies (`numpy.concatenate`, `numpy.array`, ...,
    grader/vgpu/numpy_joins.py), or a tensor built from row lists (`torch.tensor`,
    grader/vgpu/row_lists.py)."""
    op = str(concatenation.get("op") or "")
    return op if op.startswith(("numpy.", "torch.tensor", "torch.as_tensor")) else "torch.cat"


def chunk_concatenations(run, batch):
    """The torch.cat calls (concat, vstack, stack) into `batch` rows along dim 0 whose inputs
    are the outputs of the model's passes on the chunks (each as the pass returned it, or a
    copy of it `.to()` made): `torch.cat(torch.chunk(output, 2))` is Part 1's output cut and
    glued back, no chunk run through the model (a red team's adv28 earned 2.4 points with it).
    A record without `storages` (written before they were) is taken as it says."""
    outputs = {p.get("storage_out") for p in all_chunk_passes(run, batch)} - {None}
    return [c for c in concatenations(run) if rows_of(c.get("shape")) == batch
            and ("storages" not in c
                 or (outputs and c["storages"] and set(c["storages"]) <= outputs))]


def not_chunk_concatenations(run, batch) -> str:
    """'' or, for the feedback, the concatenations into `batch` rows, and the tensors of
    `batch` rows filled row by row, of other tensors than the chunks' outputs."""
    others = [c for c in concatenations(run) if rows_of(c.get("shape")) == batch
              and c not in chunk_concatenations(run, batch)]
    outputs = {p.get("storage_out") for p in all_chunk_passes(run, batch)} - {None}
    fills = [f for f in run.of("fill", 0) if f.get("rows_total") == batch
             and f.get("source") not in outputs]
    said = ""
    if others:
        said += (f"; {joined_by(others[-1])} at {others[-1].get('site')} joins "
                 f"{len(others[-1].get('inputs') or [])} tensor(s) that are not the outputs of "
                 "the model's passes on the chunks (Part 1's output cut into pieces and joined "
                 "back, or rebuilt from its .tolist(), combines no chunk's output)")
    if fills:
        said += (f"; the tensor filled at {fills[-1].get('site')} is filled with a tensor that "
                 "is not the output of a model's pass on a chunk (Part 1's output cut into "
                 "pieces combines no chunk's output)")
    copies = part1_copies(run, batch)
    if copies:
        compare, export = copies[-1]
        said += (f"; the tensor compared with Part 1's output at {compare.get('site')} has Part "
                 f"1's rows, but Part 1's output was taken to the host before it (its "
                 f".{export.get('how')}() at {export.get('site')}) and no chunk's output was: it "
                 "is a copy of Part 1's output, which combines no chunk's output")
    return said


def compared_with_full(run, batch):
    """[(what, rows)] of the tensors of `batch` rows the script compares (torch.allclose,
    torch.equal) after running the chunks: only tensors of their own, never a forward pass's
    output under another name (`final_output = model(x)` has Part 1's rows without combining
    anything), nor a concatenation's result (decided as a concatenation: one of other tensors
    than the chunks' outputs combines none of them), nor a tensor filled row by row (decided by
    what filled it: Part 1's output cut into it combines nothing), nor a copy made of any of
    them (`.to()`, `.clone()`, ...: their storage is written as the original's,
    grader/vgpu/rows.py; a red team's adv29 B3 earned 2.4 points with output.clone()), nor one
    compared where Part 1's output had been taken to the host and no chunk's output had
    (`part1_copies`)."""
    copies = [compare for compare, _ in part1_copies(run, batch)]
    return [(f"the output compared with Part 1's at {compare.get('site')}", operand["rows"])
            for compare, operand in _own_tensors_compared(run, batch) if compare not in copies]


def _own_tensors_compared(run, batch):
    """[(compare, operand)] of the tensors of their own of `batch` rows the script compares
    after running the chunks (`compared_with_full`)."""
    if not chunk_passes(run, batch):
        return []
    outputs = {p.get("storage_out") for p in forward_passes(run)} - {None}
    outputs |= {c.get("storage") for c in concatenations(run)} - {None}
    outputs |= {f.get("storage") for f in run.of("fill", 0)} - {None}
    return [(compare, operand) for compare in comparisons(run) for operand in compare["operands"]
            if rows_of(operand.get("shape")) == batch and operand.get("rows")
            and operand.get("storage") is not None and operand["storage"] not in outputs]


def part1_copies(run, batch):
    """[(compare, export)] of the comparisons of a tensor of its own (`_own_tensors_compared`)
    made after Part 1's output was taken to the host (`export`: its `.tolist()`, `.numpy()`,
    np.array of it, grader/vgpu/rows.py) while no chunk's output had been: the tensor is Part 1's
    output copied through the host (rebuilt from copies of its row lists, a red team's adv36
    F4, or from its numpy copy or numpy `.tolist()`: 9.5 -> 7.1 where the chunks had run on the
    batch and been thrown away). Part 1's rows and the chunks' are equal, so only where the
    values came from tells them apart."""
    full = full_batch_pass(run, batch)
    if full is None or full.get("storage_out") is None:
        return []
    chunks = {p.get("storage_out") for p in all_chunk_passes(run, batch)} - {None}
    at = {id(event): position for position, event in enumerate(run.events)}
    exports = [(at[id(e)], e) for e in run.of("export", 0)]
    found = []
    for compare, _ in _own_tensors_compared(run, batch):
        before = [e for position, e in exports if position < at.get(id(compare), -1)]
        part1 = next((e for e in before if e.get("storage") == full["storage_out"]), None)
        if part1 is not None and not any(e.get("storage") in chunks for e in before) \
                and all(compare is not seen for seen, _ in found):
            found.append((compare, part1))
    return found


def _ranges(indices):
    if not indices:
        return "none"
    text, start, prev = [], indices[0], indices[0]
    for i in indices[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        text.append(f"row {start}" if start == prev else f"rows {start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(text[:4]) + (", ..." if len(text) > 4 else "")


# -- Part 2: simulated data parallelism -------------------------------------------------------------


@pytest.mark.check("practical4.chunk_shapes")
def test_batch_split_into_chunks(two_gpus):
    split_into_chunks(two_gpus, BATCH)


@pytest.mark.check("practical4.chunks_equal_full")
def test_combined_output_equals_full_output(two_gpus):
    combined_equals_full(two_gpus, BATCH)


@pytest.mark.check("practical4.uneven_batch")
def test_uneven_batch_split_and_combined(runs):
    """No point (the handout's batch is 64): a split into BATCH_SIZE // 2 rows is right for
    it; this tells the student whether their split keeps every row of a batch of 63."""
    run = runs.script(**run_spec(UNEVEN))
    if any(e.get("kind") == "constant_not_found" for e in run.of("error")):
        # The handout writes the batch as 64 in place and asks for no constant: a script that
        # follows it is not to be failed for it, not even by a check worth no point (a red
        # team's adv41 F7: `pytest grader/` ended "1 failed" beside full points).
        pytest.skip(f"the batch size is not a top-level constant BATCH_SIZE (the handout "
                    f"writes it as {BATCH} in place and asks for none): the grader tries an "
                    f"uneven batch of {UNEVEN} rows only where it is one; worth no point, "
                    "nothing to fix")
    split_into_chunks(run, UNEVEN)
    combined_equals_full(run, UNEVEN)


def split_into_chunks(run, batch):
    look = "Part 2: chunks = torch.chunk(x, 2), and one forward pass of the model per chunk"
    expected = (f"the batch of {batch} rows split into {CHUNKS} chunks along dim 0 "
                f"({' + '.join(map(str, chunk_rule(batch)))} rows with torch.chunk), the model "
                "run on each chunk, every row of the batch in one chunk")
    full = evidence(run, full_batch_pass(run, batch), expected,
                    f"no forward pass of the model on the whole batch of {batch} (Part 1)", look)
    chunks = evidence(run, chunk_passes(run, batch), expected,
                      "no forward pass of the model on part of the batch after Part 1", look)
    sizes = [rows_of(p["batch"]) for p in chunks]
    assert len(chunks) == CHUNKS and sum(sizes) == batch, explain(
        expected, f"{len(chunks)} forward pass(es) on parts of the batch, of {sizes} rows"
        + ("" if sum(sizes) == batch else f" ({sum(sizes)} of the batch's {batch} rows)"), look)
    unrecorded = full["rows_dropped"] or full["rows_out_dropped"]
    assert not unrecorded, explain(
        expected, part1_unrecorded(run, batch), look)
    if any(p["rows_dropped"] or p["rows_out_dropped"] for p in chunks):
        # Rows not recorded (rows.py's budget, spent after Part 1): the sizes decide, and each
        # chunk's output's sum, which is that of the batch's rows it stands for, in order.
        assert not chunks_unrecorded(run, batch), explain(
            expected, chunks_unrecorded(run, batch), look)
        return
    seen = [w for p in chunks for w in match_rows(p["rows_in"], full["rows_in"])]
    assert None not in seen and sorted(seen) == list(range(batch)), explain(
        expected, f"the chunks hold {len([w for w in seen if w is not None])} rows of the batch "
        f"and {seen.count(None)} other rows; "
        f"{batch - len(set(w for w in seen if w is not None))} row(s) of the batch are in no chunk",
        look + " (split x itself, not another tensor)")


def part1_unrecorded(run, batch) -> str:
    """The cause said where Part 1's rows were not recorded: the script spent the records of
    rows (rows.py's budget) before Part 1 on passes on other data. Nothing is then excused: 40
    passes of 65 rows before Part 1 had earned chunks on near-zeros every Part 2 point (a red
    team's adv36 F3, 6.1 -> 9.5)."""
    passes, full = forward_passes(run), full_batch_pass(run, batch)
    earlier = passes.index(full) if full in passes else len(passes)
    return (f"the rows of Part 1's pass on the batch were not recorded: the script ran "
            f"{earlier} forward pass(es) on other data before it, which used up the "
            "records of rows, so neither the chunks' rows nor their combination can be checked "
            "against it (run Part 1 first, before any other pass of the model)")


def chunks_unrecorded(run, batch) -> str:
    """'' or the cause said where the rows of Part 2's chunk passes were not recorded (the
    script spent the records of rows, rows.py's budget, after Part 1 on passes on other data)
    and a chunk's output's sum is not that of the batch's rows it stands for, in the chunks'
    order (`stood_for`). A timing loop on fresh inputs keeps its points; 70 passes of 65 rows
    before chunks run on other data, their host arrays then overwritten with Part 1's rows, had
    earned every Part 2 point (eng_p4e, 9.5 -> 6.1)."""
    full, start = full_batch_pass(run, batch), 0
    known = (full or {}).get("rows_out") or []
    for forward in chunk_passes(run, batch):
        count = rows_of(forward["out_shape"]) or 0
        if (forward["rows_out_dropped"] or forward["rows_dropped"]) \
                and stood_for(forward, known[start:start + count]) is None:
            return ("the rows of the model's passes on the chunks were not recorded (the script "
                    "ran forward passes on other data after Part 1, which used up the records "
                    f"of rows), and the output of its chunk pass on rows {start}-"
                    f"{start + count - 1} does not add up to the sum of those rows of Part 1's "
                    "output: it ran on other data than that chunk of the batch")
        start += count
    return ""


def chunk_rule(batch, parts=CHUNKS):
    size = -(-batch // parts)
    return [min(size, batch - start) for start in range(0, batch, size)]


def combined_equals_full(run, batch):
    look = "Part 2: final_output = torch.cat(outputs), the chunks' outputs in the chunks' order"
    expected = (f"the chunks' outputs combined (torch.cat) equal Part 1's output on the batch of "
                f"{batch}, row by row and in order (up to float rounding)")
    verdict = evidence(run, combined_against_full(run, batch), expected,
                       f"no torch.cat of the chunks' outputs into {batch} rows was seen after "
                       "Part 1's forward pass (nor a numpy join, np.concatenate or np.vstack, "
                       "of the arrays their .cpu().numpy() gave: a copy numpy made of them, "
                       f"np.array(out), is no longer their output), nor a tensor of {batch} rows "
                       "filled with them (final_output[a:b] = out), nor a tensor of them "
                       "compared with Part 1's output (torch.allclose(final_output, output))"
                       + not_chunk_concatenations(run, batch), look)
    equal, cause = verdict
    assert equal, explain(expected, cause, look)


# -- Part 3: simulated model parallelism --------------------------------------------------------


@pytest.mark.check("practical4.mp_layer_devices")
def test_layers_on_two_gpus(part3_run):
    look = "Part 3: layer1 = nn.Linear(1000, 2000).to(device0), layer2 = nn.Linear(2000, " \
           "1000).to(device1)"
    expected = "in Part 3, layer1 (Linear 1000->2000) on cuda:0 and layer2 (Linear 2000->1000) " \
               "on cuda:1"
    found = evidence(part3_run, part3_layers(part3_run), expected,
                     part3_not_run(part3_run, "no forward pass through Part 3's layer1 or "
                                   "layer2"), look)
    assert found.get("layer1") == {"cuda:0"} and found.get("layer2") == {"cuda:1"}, explain(
        expected, f"layer1 on {sorted(found.get('layer1', [])) or 'no device seen'}, layer2 on "
        f"{sorted(found.get('layer2', [])) or 'no device seen'}", look)


@pytest.mark.check("practical4.mp_one_transfer")
def test_one_activation_transfer(part3_run):
    look = "Part 3: out = out.to(device1) between the two layers, once"
    expected = (f"exactly one move of the activation [{BATCH}, {HIDDEN}] from cuda:0 to cuda:1 "
                "in Part 3's forward pass")
    forwards = moves_per_forward(part3_run)
    # Where layer2 never ran, the script never got to the move: said with its cause (a crash).
    evidence(part3_run, forwards or "layer2" in part3_layers(part3_run, with_stopped=False),
             expected, part3_not_run(part3_run, "no forward pass through Part 3's layer2"),
             look)
    # Every forward pass moves it once: Part 3 timed (run again) is judged pass by pass.
    wrong = next((moves for moves in forwards if not _one_move_right(moves)), None)
    assert forwards and wrong is None, explain(expected, _moves_observed(forwards, wrong), look)


def _moves_observed(forwards: list[list[dict]], wrong: list[dict] | None) -> str:
    if not forwards:
        return "0 move(s) of the activation between GPUs"
    counts = [len(moves) for moves in forwards]
    if len(set(counts)) == 1:
        said = f"{counts[0]} move(s) of the activation between GPUs in one forward pass"
        if len(forwards) > 1:
            said += f" (in each of the {len(forwards)} forward passes of Part 3)"
    else:
        said = f"moves of the activation between GPUs per forward pass of Part 3: {counts}"
    return said + (f"; the first pass not right: {_moves_said(wrong)}" if wrong else "")


@pytest.mark.check("practical4.mp_output_shape")
def test_output_comes_out_of_second_gpu(part3_run):
    look = "Part 3: out = layer2(out) on cuda:1"
    expected = f"Part 3's output of shape [{BATCH}, {OUT_DIM}] comes out of layer2 on cuda:1"
    output = evidence(part3_run, part3_output(part3_run), expected,
                      part3_not_run(part3_run, f"no forward pass after Part 2 giving [{BATCH}, "
                                    f"{OUT_DIM}] (Part 3's layer2)"), look)
    assert output["out_device"] == "cuda:1", explain(
        expected, f"layer2's output on {output['out_device']}", look)


def own_parts_passing(run, part3=None) -> list[str]:
    """The checks of the student's own Parts 2 and 3 that pass on the handout's 2-GPU run
    (Part 3 on `part3`, the run past Part 2's TODO where it stopped there)."""
    part3 = part3 or run
    parts = {"practical4.chunk_shapes": lambda: split_into_chunks(run, BATCH),
             "practical4.chunks_equal_full": lambda: combined_equals_full(run, BATCH),
             "practical4.mp_layer_devices": lambda: test_layers_on_two_gpus(part3),
             "practical4.mp_one_transfer": lambda: test_one_activation_transfer(part3),
             "practical4.mp_output_shape": lambda: test_output_comes_out_of_second_gpu(part3)}
    passing = []
    for check, judged in parts.items():
        try:
            judged()
        except AssertionError:
            continue
        passing.append(check)
    return passing


# How a run that asks for a GPU the machine lacks stops, on real and on virtual GPUs.
_NO_SUCH_GPU = re.compile(r"invalid device ordinal", re.I)


@pytest.mark.check("practical4.one_gpu_message")
def test_one_gpu_says_two_are_needed(runs, submission, two_gpus, part3_run):
    one = past_part2_todo(runs, submission, runs.script(**run_spec(gpus=1)), 1)
    look = "Part 3: if torch.cuda.device_count() >= 2: ... else: print(\"Model parallelism " \
           "requires at least 2 GPUs.\")"
    expected = "on a machine with 1 GPU, Part 3 prints that model parallelism requires at " \
               "least 2 GPUs instead of failing"
    # The handout's words or any that say there are too few GPUs ("Skipping Part 3: found 1
    # GPU(s), need >= 2", "Not enough GPUs ...": a red team's adv41 F2 lost the half point on
    # five such lines): grader/checks/too_few_gpus.py.
    # Printed, or logged (`logging` writes to stderr by default: a red team's honest script
    # lost the half point); stderr only of a run that ended, so a raised error is no message,
    # or that stopped itself with sys.exit("...") after Parts 1-2, as the course's P5/P6
    # templates say they lack GPUs (adv41: the handout's own words, sys.exit'ed, scored 0).
    exited = ended_by_exit(one) and bool(forward_passes(one))   # Part 1 ran before it
    output = one.stdout + ("\n" + one.stderr if one.ok or exited else "")
    said = too_few_gpus_line(output)
    evidence(one, said, expected, "no line that says there are too few GPUs for Part 3 (one "
             "that names the GPUs with a word such as need, at least, fewer, not enough, only "
             f"one, skip); the output ended with: {output.strip().splitlines()[-1:] or 'nothing'}",
             look)
    # Said, and then a GPU that is not there used anyway: the message is a banner, not the
    # guard the handout asks for (a red team's adv34 F1 printed "requires at least 2 GPUs"
    # before an unguarded Part 3 that stopped on cuda:1).
    assert one.ok or not _NO_SUCH_GPU.search(one.stderr or ""), explain(
        expected,
        "the message is printed, but the run on 1 GPU then stopped using a GPU it does not "
        f"have: {one.problem()}", look)
    # The message is Part 3's (the handout's Part 3 holds the `if`/`else`): with Part 3 still
    # the template's TODO, the given `else` is all there is of it (a TA's audit: a student who
    # never wrote Part 3 earned the half point beside a working Part 2).
    assert not stopped_at_todo(part3_run, 3), explain(
        expected + ", beside a Part 3 of your own",
        "the message is printed, but Part 3 is still the template's TODO (it stopped the run "
        "on 2 GPUs): the `else` branch that prints the message is the template's given code, "
        "which earns nothing by itself", "Part 3 of practical4/concepts.py (its TODO)")
    # The message is the template's given `else` (given code earns nothing by itself), reached
    # on one GPU by any Part 2 that does not crash: it counts beside a Part 2 or Part 3 of the
    # student's own that earns something (a TA's s15 earned it with Part 2 faked by
    # `final_output = output` and Part 3's layers both on cuda:0).
    assert own_parts_passing(two_gpus, part3_run), explain(
        expected + ", beside a Part 2 or Part 3 of your own that works",
        "the message is printed, but neither your Part 2 (the chunks and their combined "
        "output) nor your Part 3 (the layers on cuda:0 and cuda:1) passes any of its checks "
        "on 2 GPUs; the `else` branch that prints it is the template's given code, which "
        "earns nothing by itself",
        "Parts 2 and 3 of practical4/concepts.py: their own checks say what is missing")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical4/answers.yaml is compared with the grader's run of the same concepts.py on 2 GPUs;
# an answer is checked wherever the part it is about ran, even if a later part crashed.


@pytest.mark.check("practical4.output_shape_reported")
def test_reported_output_shape(two_gpus, part3_run, answers, agree):
    full = full_batch_pass(two_gpus, BATCH)
    truth = list(full["out_shape"]) if full and full["out_shape"] else None
    value, truth = answer_and_truth(answers, "part1.output_shape", truth, two_gpus)
    agree("part1.output_shape", value, truth, f"makes a Part 1 output of shape {truth}")
    # Part 1 is the template's given code, run before its TODOs: its output shape counts
    # beside a Part 2 or 3 of the student's own that works, as the one-GPU message does (the
    # untouched template with a sheet had earned 0.4: adv52 F5).
    assert own_parts_passing(two_gpus, part3_run), explain(
        "your answer to part1.output_shape, beside a Part 2 or Part 3 of your own that works",
        "the answer agrees with Part 1, but neither your Part 2 (the chunks and their combined "
        "output) nor your Part 3 (the layers on cuda:0 and cuda:1) passes any of its checks on "
        "2 GPUs; Part 1 is the template's given code, which earns nothing by itself",
        "Parts 2 and 3 of practical4/concepts.py: their own checks say what is missing")


# Part 3's layout as the handout gives it: an answer about Part 3 is about this model
# parallelism, not about whatever a Part 3 that is not it does (adv52 F5: both layers on
# cuda:0, no move, and a sheet agreeing with it had kept 0.8), as Practical 5's split table
# takes DataParallel's chunk rule, which the question asks for.
HANDOUT_PART3 = {"layer1": "cuda:0", "layer2": "cuda:1"}


def not_the_handouts_part3(part3_run, layers=tuple(HANDOUT_PART3)) -> str | None:
    """Why Part 3's `layers` are not where the handout puts them, or None."""
    found = part3_layers(part3_run)
    wrong = [f"{layer} on {', '.join(sorted(found.get(layer, ()))) or 'no device seen'} "
             f"(the handout: {HANDOUT_PART3[layer]})" for layer in layers
             if found.get(layer) != {HANDOUT_PART3[layer]}]
    if not wrong:
        return None
    return explain(
        "an answer about Part 3's model parallelism as the handout lays it out: layer1 on "
        "cuda:0, layer2 on cuda:1, one move of the activation between them",
        f"the answer agrees with your Part 3, but it puts {'; '.join(wrong)}: that is not the "
        "model parallelism the question is about, so agreeing with it earns no point",
        "Part 3 of practical4/concepts.py: mp_layer_devices says what to change")


@pytest.mark.check("practical4.chunk_shapes_reported")
def test_reported_chunk_shapes(two_gpus, answers, agree):
    truth = [list(p["batch"]) for p in chunk_passes(two_gpus, BATCH)] or None
    value, truth = answer_and_truth(answers, "part2.chunk_shapes", truth, two_gpus)
    if isinstance(value, dict) and "each" in value:
        # "32x1000 each" (the sheet's question gives no count): that shape for every chunk.
        value = [value["each"]] * len(truth)
    agree("part2.chunk_shapes", value, truth,
          f"runs the model on chunks of shapes {truth} in Part 2",
          expected=f"{truth} (one shape per chunk, in order)")


@pytest.mark.check("practical4.outputs_equal_reported")
def test_reported_outputs_equal(two_gpus, answers, agree):
    verdict = combined_against_full(two_gpus, BATCH)
    value, verdict = answer_and_truth(answers, "part2.outputs_equal", verdict, two_gpus)
    equal, cause = verdict
    agree("part2.outputs_equal", value, equal, f"combines the chunks so that {cause}",
          expected={True: "yes", False: "no"}[equal])


@pytest.mark.check("practical4.layer_devices_reported")
@pytest.mark.parametrize("layer, qid", [("layer1", "part3.layer1_device"),
                                        ("layer2", "part3.layer2_device")], ids=["layer1", "layer2"])
def test_reported_layer_devices(part3_run, answers, agree, layer, qid):
    seen = sorted(part3_layers(part3_run).get(layer, set()))
    truth = (seen[0] if len(seen) == 1 else seen) if seen else None
    value, truth = answer_and_truth(answers, qid, truth, part3_run)
    name = "Linear(1000, 2000)" if layer == "layer1" else "Linear(2000, 1000)"
    agree(qid, value, truth, f"puts {layer} ({name}) on {', '.join(seen)}",
          expected=f"{truth} (a device written like cuda:N)" if isinstance(truth, str) else None,
          compare_as=device_name(value) or value)
    not_the_task = not_the_handouts_part3(part3_run, (layer,))
    assert not_the_task is None, not_the_task


@pytest.mark.check("practical4.transfers_reported")
def test_reported_transfers_per_forward(part3_run, answers, agree):
    forwards = moves_per_forward(part3_run)
    # Counted where Part 3's layer2 ran (or a move was seen): a script stopped before it never
    # got to the move, and "your code moves it 0 times" had told a right answer of 1 to change.
    # Per forward pass, the first one's (a timed Part 3 runs it again: adv31 H2).
    ran = part3_layers(part3_run, with_stopped=False)
    moves = forwards[0] if forwards else []
    truth = len(moves) if moves or "layer2" in ran else None
    value, truth = answer_and_truth(answers, "part3.transfers_per_forward", truth, part3_run)
    counts = [len(m) for m in forwards]
    agree("part3.transfers_per_forward", value, truth,
          f"moves the activation between GPUs {truth} time(s) in Part 3's forward pass"
          + (" (" + ", ".join(f"{m['src']} -> {m['dst']}" for m in moves) + ")" if moves else "")
          + (f" (its first; per forward pass: {counts})" if len(set(counts)) > 1 else ""))
    not_the_task = not_the_handouts_part3(part3_run)
    assert not_the_task is None, not_the_task
