"""A graph traced with a batch of 1: when its guards pin the batch to 1, trace_graph traces once more
with the batch arrays repeated to 2 (Graph._probe_batch_of_one), so other batch sizes replay with no
retrace at call time; never when the graph writes state, and the random generators are put back."""
import warnings

import numpy as np
import pytest
import torch

import ivytrace


def _branchy(x):
    # A program that branches on a batch of 1, as transformers' masking code does.
    if x.shape[0] == 1:
        return (x.squeeze(0) * 2).sum(-1)
    return (x * 2).sum(-1)


@pytest.mark.parametrize("make", [torch.randn, lambda *s: np.random.default_rng(0).standard_normal(s)])
def test_a_batch_of_1_branch_is_probed_and_other_batches_replay_without_retrace(make):
    g = ivytrace.trace_graph(_branchy, args=(make(1, 5),))
    assert g.traces == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.RetraceWarning)
        for b in (3, 1, 7, 2):
            x = make(b, 5)
            got, want = g(x), _branchy(x)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert g.traces == 2


def test_no_probe_when_the_graph_is_general_or_there_is_no_batch_of_1():
    assert ivytrace.trace_graph(lambda x: (x * 2).sum(-1), args=(torch.randn(1, 5),)).traces == 1
    assert ivytrace.trace_graph(_branchy, args=(torch.randn(4, 5),)).traces == 1
    assert ivytrace.trace_graph(lambda x: x * 2, args=(torch.randn(()),)).traces == 1


def test_the_probe_can_be_turned_off():
    g = ivytrace.trace_graph(_branchy, args=(torch.randn(1, 5),), probe_batch_of_one=False)
    assert g.traces == 1
    with pytest.raises(ivytrace.GuardError):
        g(torch.randn(3, 5))


def test_no_probe_when_the_graph_writes_state():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0

        def forward(self, x):
            self.count += 1
            return _branchy(x)

    m = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ivytrace.trace_graph(m, args=(torch.randn(1, 5),))
    assert m.count == 1                          # called once, as eager would have
    assert ivytrace.graph_of(m).traces == 1


def test_the_probe_puts_the_random_generators_back():
    def noisy(x):
        if x.shape[0] == 1:
            return x.squeeze(0) + torch.rand(5) + np.random.rand()
        return x + torch.rand(5) + np.random.rand()

    torch.manual_seed(3)
    np.random.seed(3)
    ivytrace.trace_graph(noisy, args=(torch.zeros(1, 5),))
    after_trace = torch.rand(3), np.random.rand(3)
    torch.manual_seed(3)
    np.random.seed(3)
    noisy(torch.zeros(1, 5))
    after_eager = torch.rand(3), np.random.rand(3)
    assert torch.equal(after_trace[0], after_eager[0])
    assert np.array_equal(after_trace[1], after_eager[1])


def test_a_function_that_refuses_a_batch_of_2_keeps_one_specialization():
    def one_only(x):
        assert x.shape[0] == 1, "this program takes a single example"
        return x * 2

    g = ivytrace.trace_graph(one_only, args=(torch.randn(1, 3),))
    assert g.traces == 1
    torch.testing.assert_close(g(torch.ones(1, 3)), torch.ones(1, 3) * 2)
