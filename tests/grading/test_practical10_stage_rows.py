"""Practical 10: a GPU is a stage of the replica only where its layers ran on the micro-batch.

`layer_devices` says where a pass's layers ran, not on how many rows: one stage doing all the
work on cuda:r beside a spare nn.Linear on cuda:r+2 fed `x[:2]` read as two stages (cuda:r
then cuda:r+2) and kept the layout's points. Each pass now also records the most rows a layer
on each GPU was handed (`forward_out`'s `layer_rows`, grader/vgpu/observe.py), and a GPU counts
where that is the micro-batch's rows (test_practical10.stages_of_pass). Honest replicas, however
their stages are written, keep both GPUs.

The models train here on a virtual node as a graded run's do (a forward and a backward pass per
micro-batch, then the optimizer's step), 2 ranks' worth of layout on rank 0's GPUs.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation

DIM, HIDDEN, ROWS = 8, 16, 16
CUDA0, CUDA2 = torch.device("cuda:0"), torch.device("cuda:2")


class SpareBeside(nn.Module):
    """The forgery: every layer on cuda:0, a spare on cuda:2 fed two rows of the activations
    (its output added times 0, so a backward reaches it)."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA0)
        self.spare = nn.Linear(DIM, DIM).to(CUDA2)

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        return x.to(CUDA2) + 0 * self.spare(x[:2].to(CUDA2)).sum()


class SpareFirst(SpareBeside):
    """The forgery with the spare run before the stage: first to run is no stage either."""

    def forward(self, x):
        side = self.spare(x[:2].to(CUDA2)).sum()
        return self.stage0(x.to(CUDA0)).to(CUDA2) + 0 * side


class Sequential(nn.Module):
    """The handout's TwoStageModel."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN, DIM)).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class Stage(nn.Module):
    """A stage of its own that moves its input where it is."""

    def __init__(self, layers, device):
        super().__init__()
        self.device, self.layers = device, layers.to(device)

    def forward(self, x):
        return self.layers(x.to(self.device))


class SeparateStages(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = Stage(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()), CUDA0)
        self.stage1 = Stage(nn.Linear(HIDDEN, DIM), CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x))


class Tokens(nn.Module):
    """Stage 0 on tokens (each row cut in 4: four times the rows), stage 1 on the rows again."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM // 4, HIDDEN // 4), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Linear(HIDDEN, DIM).to(CUDA2)

    def forward(self, x):
        rows = x.shape[0]
        tokens = self.stage0(x.to(CUDA0).reshape(rows * 4, -1))
        return self.stage1(tokens.reshape(rows, -1).to(CUDA2))


class ChunksInForward(Sequential):
    """GPipe's way: the micro-batch cut again inside forward, each chunk through both stages."""

    def forward(self, x):
        return torch.cat([super(ChunksInForward, self).forward(c) for c in x.tensor_split(2)])


class BareStage(nn.Module):
    """Stage 1 of bare parameters used with matmul, a module of its own."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(HIDDEN, DIM) / HIDDEN ** 0.5)

    def forward(self, x):
        return x @ self.w


class BareParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(CUDA0)
        self.stage1 = BareStage().to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class SeqFirst(nn.Module):
    """Stage 1 a recurrent or attention layer in PyTorch's default (seq, batch, feature)
    layout, on rows cut into SEQ steps: dim 0 of its input is SEQ (2), fewer than a micro-batch
    (4), though it runs on every row of it."""

    SEQ = 2

    def __init__(self, kind="lstm"):
        super().__init__()
        width = DIM // self.SEQ
        self.stage0 = nn.Sequential(nn.Linear(width, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, width)).to(CUDA0)
        self.stage1 = {"lstm": lambda: nn.LSTM(width, width),
                       "gru": lambda: nn.GRU(width, width),
                       "transformer": lambda: nn.TransformerEncoderLayer(
                           width, 2, dim_feedforward=HIDDEN)}[kind]().to(CUDA2)

    def forward(self, x):
        rows = x.shape[0]
        steps = self.stage0(x.to(CUDA0).reshape(rows, self.SEQ, -1))
        out = self.stage1(steps.to(CUDA2).transpose(0, 1))
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(0, 1).reshape(rows, -1)


class SeqFirstGRU(SeqFirst):
    def __init__(self):
        super().__init__("gru")


class SeqFirstTransformer(SeqFirst):
    def __init__(self):
        super().__init__("transformer")


def trained(traced_vnode, model_class, micro_batches=4, rows=ROWS) -> Observation:
    """The trace of two optimizer steps, each over `micro_batches` micro-batches of `rows`."""
    events = traced_vnode(4)
    torch.manual_seed(0)
    model = model_class()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(rows, DIM, device=CUDA0), torch.randn(rows, DIM, device=CUDA2)
    for _ in range(2):
        optimizer.zero_grad()
        for mx, my in zip(x.tensor_split(micro_batches), y.tensor_split(micro_batches)):
            loss = nn.functional.mse_loss(model(mx), my) / micro_batches
            loss.backward()
        optimizer.step()
    return Observation("practical10/sample.py", gpus=4, returncode=0, events=list(events),
                       stdout="")


@pytest.mark.parametrize("model_class", [SpareBeside, SpareFirst])
def test_a_spare_layer_fed_a_slice_is_no_second_stage(traced_vnode, model_class):
    run = trained(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    assert passes and all(p["layer_rows"] and 2 in p["layer_rows"] for p in passes), (
        f"expected each pass to record the spare's 2 rows on cuda:2 (layer_rows); observed "
        f"{[(p['layer_devices'], p['layer_rows']) for p in passes]}")
    stages = p10.stage_gpus(run, 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 (the spare on cuda:2 ran on 2 of each micro-batch's 4 "
        f"rows); observed {stages}; where to look: test_practical10.stages_of_pass")


@pytest.mark.parametrize("model_class, micro_batches, rows", [
    (Sequential, 4, ROWS), (SeparateStages, 4, ROWS), (Tokens, 4, ROWS),
    (ChunksInForward, 4, ROWS), (BareParameters, 4, ROWS),
    (Sequential, 3, ROWS), (ChunksInForward, 3, 64),
    (SeqFirst, 4, ROWS), (SeqFirstGRU, 4, ROWS), (SeqFirstTransformer, 4, ROWS),
], ids=["nn.Sequential stages", "stages as modules moving their input", "tokens as rows",
        "chunks inside forward", "bare parameters in a module", "uneven micro-batches",
        "uneven chunks inside forward", "a seq-first nn.LSTM stage", "a seq-first nn.GRU stage",
        "a seq-first transformer stage"])
def test_honest_stages_are_both_stages(traced_vnode, model_class, micro_batches, rows):
    stages = p10.stage_gpus(trained(traced_vnode, model_class, micro_batches, rows), 0)
    assert stages == [0, 2], (
        f"expected stage 0 on cuda:0 and stage 1 on cuda:2 for {model_class.__name__} with "
        f"{micro_batches} micro-batches of {rows} rows; observed {stages}; where to look: "
        "test_practical10.stages_of_pass")


@pytest.mark.parametrize("devices, rows_at, rows, stages", [
    (["cuda:0", "cuda:2"], [16, 2], 16, ["cuda:0"]),
    (["cuda:2", "cuda:0"], [2, 16], 16, ["cuda:0"]),
    (["cuda:0", "cuda:2"], [64, 16], 16, ["cuda:0", "cuda:2"]),    # tokens: more rows
    (["cuda:0", "cuda:2"], [8, 8], 16, ["cuda:0", "cuda:2"]),      # chunks inside forward
    (["cuda:0", "cuda:2"], [16, None], 16, ["cuda:0"]),  # recorded as unknown: no stage
    (["cuda:0", "cuda:2"], None, 16, ["cuda:0", "cuda:2"]),        # a trace from before
])
def test_stages_of_a_pass(devices, rows_at, rows, stages):
    assert p10.stages_of_pass(devices, rows_at, rows) == stages


# -- a stage of bare parameters held by the model itself (`x @ self.w`) ----------------------------
# No layer is called for it, so no layer call noted its GPU: the replica read as one stage on
# cuda:r (or, under a wrapper, its GPU as the first stage's). The pass's autograd graph says
# which of the model's own parameters its output came from, and the rows the matmul ran on.


class OwnParameters(nn.Module):
    """Stage 0 an nn.Sequential on cuda:0, stage 1 the model's own parameters on cuda:2."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(CUDA0)
        self.w1 = nn.Parameter(torch.randn(HIDDEN, HIDDEN, device=CUDA2) / HIDDEN ** 0.5)
        self.w2 = nn.Parameter(torch.randn(HIDDEN, DIM, device=CUDA2) / HIDDEN ** 0.5)

    def forward(self, x):
        x = torch.relu(self.stage0(x.to(CUDA0)).to(CUDA2) @ self.w1)
        return x @ self.w2


class Wrapped(nn.Module):
    """The model held by a module without parameters of its own (as DDP holds it)."""

    def __init__(self, model_class=OwnParameters):
        super().__init__()
        self.module = model_class()

    def forward(self, x):
        return self.module(x)


class OwnSpare(OwnParameters):
    """The forgery with the spare as the model's own parameter, fed two rows."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = x[:2].to(CUDA2) @ torch.relu(self.w1[:, :DIM])
        return x[:, :DIM].to(CUDA2) + 0 * side.sum()


@pytest.mark.parametrize("model_class", [OwnParameters, Wrapped],
                         ids=["the model's own parameters", "held by a wrapper"])
def test_a_stage_of_the_models_own_parameters_is_a_stage(traced_vnode, model_class):
    stages = p10.stage_gpus(trained(traced_vnode, model_class), 0)
    assert stages == [0, 2], (
        f"expected stage 0 on cuda:0 and stage 1 (x @ self.w1, @ self.w2) on cuda:2; observed "
        f"{stages}; where to look: grader/vgpu/observe.py _note_own_parameters")


def test_the_models_own_spare_parameter_fed_a_slice_is_no_stage(traced_vnode):
    stages = p10.stage_gpus(trained(traced_vnode, OwnSpare), 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 (the own parameter on cuda:2 used on 2 rows); observed "
        f"{stages}; where to look: grader/vgpu/observe.py _rows_used")


class OwnFirstStage(nn.Module):
    """Stage 0 the model's own parameter used on the data itself (no gradient to the data)."""

    def __init__(self):
        super().__init__()
        self.w0 = nn.Parameter(torch.randn(DIM, HIDDEN, device=CUDA0) / DIM ** 0.5)
        self.stage1 = nn.Linear(HIDDEN, DIM).to(CUDA2)

    def forward(self, x):
        return self.stage1(torch.relu(x.to(CUDA0) @ self.w0).to(CUDA2))


def test_a_first_stage_of_own_parameters_on_the_data_is_a_stage(traced_vnode):
    run = trained(traced_vnode, OwnFirstStage)
    rows = [p["layer_rows"] for p in p10.forward_passes(run) if p["trains"]]
    assert rows and all(r == [4, 4] for r in rows), (
        f"expected cuda:2's layer and cuda:0's own parameter each on the 4 rows of a "
        f"micro-batch; observed {rows}")
    stages = p10.stage_gpus(run, 0)
    assert stages == [0, 2], (
        f"expected cuda:0 (x @ self.w0, run first) before cuda:2; observed {stages}; where to "
        "look: grader/vgpu/observe.py _note_own_parameters")


# -- a spare whose result reaches no part of the output (adv43 F2) -------------------------------
# Fed the whole micro-batch, the spare is handed as many rows as a stage; its result thrown away
# or added times 0 carries no gradient back, and its GPU is no stage (`grad_judged` of
# `forward_out` and the `grad_used` records: grader/vgpu/observe.py _GradWatch).


class SpareWholeAfter(SpareBeside):
    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        return x.to(CUDA2) + 0 * self.spare(x.to(CUDA2)).sum()


class SpareWholeFirst(SpareBeside):
    def forward(self, x):
        side = self.spare(x.to(CUDA2)).sum()
        return self.stage0(x.to(CUDA0)).to(CUDA2) + 0 * side


class SpareWholeThrownAway(SpareBeside):
    def forward(self, x):
        self.spare(x.to(CUDA2))
        return self.stage0(x.to(CUDA0)).to(CUDA2)


class OwnSpareWhole(OwnParameters):
    """The model's own parameter on cuda:2 used on every row, times 0."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = torch.relu(x.to(CUDA2) @ self.w1)
        return x[:, :DIM].to(CUDA2) + 0 * side.sum()


@pytest.mark.parametrize("model_class", [SpareWholeAfter, SpareWholeFirst, SpareWholeThrownAway,
                                         OwnSpareWhole])
def test_a_spare_on_the_whole_micro_batch_whose_result_is_unused_is_no_stage(traced_vnode,
                                                                             model_class):
    run = trained(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    assert passes and all(p["grad_unused"] == ["cuda:2"] for p in passes), (
        f"expected each training pass to record cuda:2 as carrying no gradient back "
        f"(grad_unused); observed {[(p['layer_devices'], p['grad_unused']) for p in passes]}; "
        "where to look: grader/vgpu/observe.py _GradWatch")
    stages = p10.stage_gpus(run, 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 (the spare's result on cuda:2 reaches no part of the "
        f"output); observed {stages}; where to look: test_practical10.stage_gpus")


class InPlaceRelu(nn.Module):
    """Stages whose layers' outputs are changed in place after the call (ReLU(inplace=True))."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(inplace=True)).to(CUDA0)
        self.stage1 = nn.Linear(HIDDEN, DIM).to(CUDA2)

    def forward(self, x):
        return torch.relu_(self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2)))


@pytest.mark.parametrize("model_class", [Sequential, SeparateStages, BareParameters,
                                         OwnParameters, Wrapped, InPlaceRelu, SeqFirst])
def test_honest_stages_carry_gradient_back_on_both_gpus(traced_vnode, model_class):
    run = trained(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    judged = [e.get("grad_judged") for e in run.events if e.get("event") == "forward_out"]
    assert passes and all(p["grad_unused"] == [] for p in passes) and any(judged), (
        f"expected every training pass of {model_class.__name__} judged, both GPUs carrying "
        f"gradient back; observed {[(p['layer_devices'], p['grad_unused']) for p in passes]}, "
        f"judged {judged}; where to look: grader/vgpu/observe.py _GradWatch")
    assert p10.stage_gpus(run, 0) == [0, 2]


# -- a GPU whose rows are recorded as unknown (adv43 F5) ------------------------------------------
# An own parameter used where no saved tensor shows the rows (einsum on x[:1] before, an add) had
# its GPU kept as a stage; it now counts only with its rows known. einsum on every row shows them.


class OwnEinsum(OwnParameters):
    """Stage 1 the model's own parameters used through torch.einsum on every row."""

    def forward(self, x):
        x = torch.relu(torch.einsum("bh,hk->bk", self.stage0(x.to(CUDA0)).to(CUDA2), self.w1))
        return torch.einsum("bh,hd->bd", x, self.w2)


class OwnSpareEinsum(OwnParameters):
    """adv43's p10_F_own_einsum with a gradient that is not 0: einsum on x[:1]."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))[:, :DIM].to(CUDA2)
        return x + 1e-3 * torch.einsum("bd,d->b", x[:1], self.w1[0, :DIM]).sum()


class OwnSpareAdded(OwnParameters):
    """An own parameter on cuda:2 added to the output: no rows at all."""

    def forward(self, x):
        return self.stage0(x.to(CUDA0))[:, :DIM].to(CUDA2) + 1e-3 * self.w1.sum()


def test_an_own_parameter_stage_through_einsum_is_a_stage(traced_vnode):
    run = trained(traced_vnode, OwnEinsum)
    rows = [p["layer_rows"] for p in p10.forward_passes(run) if p["trains"]]
    assert rows and all(r == [4, 4] for r in rows), (
        f"expected the einsum stage's 4 rows recorded; observed {rows}; where to look: "
        "grader/vgpu/observe.py _rows_used, _USE_DEPTH")
    assert p10.stage_gpus(run, 0) == [0, 2]


@pytest.mark.parametrize("model_class", [OwnSpareEinsum, OwnSpareAdded])
def test_an_own_spare_parameter_whose_rows_are_unknown_or_few_is_no_stage(traced_vnode,
                                                                          model_class):
    stages = p10.stage_gpus(trained(traced_vnode, model_class), 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 ({model_class.__doc__.strip()}); observed {stages}; where "
        "to look: test_practical10.stages_of_pass")


# -- a stage that cuts its micro-batch's rows into tokens (eng_p10sw) -----------------------------
# Its layers are handed 8 times the pass's rows: read as a layer run on a batch the pass was not
# handed (adv28's whole batch held by the model), the pass had counted 8 times the micro-batch's
# rows and none of its rows as the batch's (7 of 12 where the reference earns 10). Rows holding
# the very numbers of the pass's input, or of an output of its layers, are the pass's own
# (grader/vgpu/pass_tokens.py); a batch held elsewhere, cut into tokens too, is not.

TOKENS = 8
WIDE = 32     # DIM * TOKENS / 2: rows of 32 numbers cut into 8 tokens of 4


class TokenStage(nn.Module):
    """Stage 0's module cuts the rows it is handed into tokens and joins them after."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(WIDE // TOKENS, HIDDEN // TOKENS), nn.ReLU())

    def forward(self, x):
        rows = x.shape[0]
        return self.layers(x.reshape(rows * TOKENS, -1)).reshape(rows, -1)


class TokensInStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = TokenStage().to(CUDA0)
        self.stage1 = nn.Linear(HIDDEN, DIM).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class TokensInForward(nn.Module):
    """The model's forward cuts stage 0's rows into tokens, between the stages."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(WIDE // TOKENS, HIDDEN // TOKENS),
                                    nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Linear(HIDDEN, DIM).to(CUDA2)

    def forward(self, x):
        rows = x.shape[0]
        tokens = self.stage0(x.to(CUDA0).reshape(rows * TOKENS, -1))
        return self.stage1(tokens.reshape(rows, -1).to(CUDA2))


class TokensInStage1(nn.Module):
    """Stage 1, layers one after another, on tokens of the activation stage 0 hands it."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(WIDE, HIDDEN), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN // TOKENS, HIDDEN // TOKENS), nn.ReLU(),
                                    nn.Linear(HIDDEN // TOKENS, DIM // TOKENS)).to(CUDA2)

    def forward(self, x):
        rows = x.shape[0]
        hidden = self.stage0(x.to(CUDA0)).to(CUDA2)
        return self.stage1(hidden.reshape(rows * TOKENS, -1)).reshape(rows, -1)


class TokensOfAHeldBatch(TokensInForward):
    """The forgery: stage 0 run on tokens of the whole batch, held by the model."""

    held = None

    def forward(self, x):
        rows = x.shape[0]
        tokens = self.stage0(self.held.reshape(-1, WIDE // TOKENS))
        whole = tokens.reshape(len(self.held), -1)[:rows]
        return self.stage1(whole.to(CUDA2)) + 0 * x.sum().to(CUDA2)


class TokensOfOtherRows(TokensOfAHeldBatch):
    """The forgery with as many numbers as the micro-batch, other ones: tokens of the held
    batch's last rows in place of the micro-batch's."""

    def forward(self, x):
        rows = x.shape[0]
        other = self.held[-rows:] + 0 * x
        tokens = self.stage0(other.reshape(rows * TOKENS, -1))
        return self.stage1(tokens.reshape(rows, -1).to(CUDA2))


def trained_on(traced_vnode, model_class, held=None):
    """Two steps of 4 micro-batches of 4 rows of WIDE numbers; `held`: a batch of that many
    rows the model holds."""
    events = traced_vnode(4)
    torch.manual_seed(0)
    model = model_class()
    if held is not None:
        model.held = torch.randn(held, WIDE, device=CUDA0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(ROWS, WIDE, device=CUDA0), torch.randn(ROWS, DIM, device=CUDA2)
    for _ in range(2):
        optimizer.zero_grad()
        for mx, my in zip(x.tensor_split(4), y.tensor_split(4)):
            (nn.functional.mse_loss(model(mx), my) / 4).backward()
        optimizer.step()
    return Observation("practical10/sample.py", gpus=4, returncode=0, events=list(events),
                       stdout="")


@pytest.mark.parametrize("model_class", [TokensInStage, TokensInForward, TokensInStage1],
                         ids=["tokens cut in the stage's module", "tokens cut in forward",
                              "stage 1 on tokens"])
def test_a_stage_on_tokens_of_the_micro_batch_runs_on_its_rows(traced_vnode, model_class):
    run = trained_on(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    # Rows are recorded before the first optimizer step only: the first step's 4 passes.
    observed = [(p["rows"], p["rows_in"] is not None or n >= 4) for n, p in enumerate(passes)]
    assert len(passes) == 8 and observed == [(ROWS // 4, True)] * 8, (
        f"expected every pass of {model_class.__name__} on its micro-batch's 4 rows, the first "
        f"step's rows recorded as the batch's; observed (rows, rows recorded) {observed}; "
        "where to look: grader/vgpu/pass_tokens.py, practical_measures._rows_as_run")
    stages = p10.stage_gpus(run, 0)
    assert stages == [0, 2], f"expected stages on cuda:0 and cuda:2; observed {stages}"


@pytest.mark.parametrize("model_class, held, rows", [
    (TokensOfAHeldBatch, ROWS, ROWS * TOKENS), (TokensOfOtherRows, ROWS, 4 * TOKENS)],
    ids=["tokens of a whole batch held", "tokens of other rows, as many numbers"])
def test_tokens_of_data_the_pass_was_not_handed_are_no_rows_of_it(traced_vnode, model_class,
                                                                  held, rows):
    passes = [p for p in p10.forward_passes(trained_on(traced_vnode, model_class, held))
              if p["trains"]]
    observed = [(p["rows"], p["rows_in"]) for p in passes]
    assert passes and observed == [(rows, None)] * len(passes), (
        f"expected every pass of {model_class.__name__} read as run on {rows} rows, none of "
        f"them the batch's (rows_in None); observed {observed}; where to look: "
        "grader/vgpu/pass_tokens.py")
