"""The DataParallel wrapper's forward_out record says its output_device and device_ids, which
Practical 5's gather check holds the gather to (adv51 F3: output_device=2 is a documented
option the script asks for, not a wrong gather)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn


@pytest.mark.parametrize("output_device, expected", [(None, "cuda:0"), (2, "cuda:2")])
def test_the_wrapper_s_output_device_is_recorded(traced_vnode, output_device, expected):
    events = traced_vnode(3)
    model = nn.DataParallel(nn.Linear(8, 4).to("cuda:0"), device_ids=[0, 1, 2],
                            output_device=output_device)
    out = model(torch.randn(12, 8, device="cuda:0"))
    records = [e for e in events if e["event"] == "forward_out" and e.get("module") == "DataParallel"]
    assert records and all(e.get("output_device") == expected for e in records), (
        f"expected forward_out of DataParallel with output_device {expected}, observed {records} "
        "(see grader/vgpu/observe.py _data_parallel_fields)")
    assert records[0]["device_ids"] == ["cuda:0", "cuda:1", "cuda:2"], records[0]
    assert str(out.device) == expected
