"""The ranks' MASTER_PORT is chosen below the kernel's ephemeral range, so that no socket the
kernel hands a port to (gloo's, another run's in the same sandbox network) takes it between the
choice and rank 0's store binding it: a run of the reference's Practical 6 failed with EADDRINUSE
on a port bind(0) had chosen (grader/vgpu/ranks.py free_port)."""
from __future__ import annotations

import socket

from grader.vgpu import ranks


def test_the_master_port_is_free_and_below_the_ports_the_kernel_hands_out():
    low, _ = ranks.ephemeral_ports()
    chosen = {ranks.free_port() for _ in range(20)}
    assert all(ranks.LOWEST_PORT <= port < low for port in chosen), (
        f"expected ports in [{ranks.LOWEST_PORT}, {low}), below the ephemeral range the kernel "
        f"gives bind(0) and connect(); observed {sorted(chosen)} (grader/vgpu/ranks.py free_port)")
    assert len(chosen) > 1, "expected runs choosing at once to draw different ports at random"


def test_a_port_already_bound_is_passed_over():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        low, _ = ranks.ephemeral_ports()
        for taken in range(ranks.LOWEST_PORT, low):
            try:
                held.bind(("127.0.0.1", taken))
                break
            except OSError:
                continue
        held.listen()
        drawn = iter([taken, taken, taken + 1 if taken + 1 < low else taken - 1])
        port = ranks.free_port(_choose=lambda start, stop: next(drawn))
        assert port != taken, f"expected the bound port {taken} passed over; observed {port}"


def test_the_range_read_where_proc_has_none(tmp_path):
    assert ranks.ephemeral_ports(str(tmp_path / "missing")) == (32768, 60999)
