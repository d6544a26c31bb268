"""Where work runs: the device, and torch threads from the CPUs actually available."""
import os

import torch

from attention_course.devices import available_cpus, pick_device, use_available_cpus


def test_the_cpus_available_follow_affinity_and_an_explicit_setting(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert 1 <= available_cpus() <= len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert available_cpus() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert available_cpus() >= 1


def test_torch_gets_half_the_available_cpus_and_at_least_one(monkeypatch):
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert use_available_cpus() == 1 == torch.get_num_threads()
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert use_available_cpus() == max(1, available_cpus() // 2) == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_the_device_is_the_cpu_without_a_gpu():
    assert pick_device("cpu").type == "cpu"
    assert pick_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
