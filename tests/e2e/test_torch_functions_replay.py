"""torch functions that were not in schemas/ (trace_graph refused them: "not in schemas/: the
runtime's allow-list refuses it"), now listed from torch's own signatures
(scripts/torch_schema_entries.py): each program is traced at one batch and replayed at another,
against eager. Most are opaque calls (replayed in torch, no ONNX lowering); a few are aliases of
canonical ops (absolute, arccos, clamp_min, swapdims) and also export."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import ivytrace

W = torch.linspace(-1, 1, 6)


def _b(x):   # read the batch, so it is an input dim of the graph
    return x.reshape(x.shape[0], 4, 6)


def _inplace_methods(x):
    y = x.clone()
    y.tril_(-1)
    y.scatter_(2, torch.zeros(x.shape[0], 4, 1, dtype=torch.long), 5.0)
    y.scatter_add_(2, torch.ones(x.shape[0], 4, 1, dtype=torch.long), x[:, :, :1])
    y.negative_()
    y.lerp_(x, 0.25)
    y.index_put_((torch.tensor([0]), torch.tensor([1])), torch.tensor(7.0), accumulate=True)
    m = x[:, :, :4].clone()
    m[0].fill_diagonal_(3.0)
    z = x.gt(0).float()
    z.eq_(1.0)
    return (y.divide(2).multiply(3).subtract(x, alpha=0.5).true_divide(1.5) + z, m.det(),
            x.unfold(2, 3, 2).sum(-1), x.split_with_sizes([1, 3], 1)[1], x.sum_to_size(1, 4, 1))


PROGRAMS = {
    "inplace_and_method_spellings": _inplace_methods,
    "glu_selu_celu_softsign": lambda x: F.glu(_b(x), -1).sum(-1) + F.selu(x).sum(2) + F.celu(x, 0.5).mean(2)
    + F.softsign(x).amax(2),
    "shrinks_threshold": lambda x: F.hardshrink(x, 0.3) + F.softshrink(x, 0.2) - F.tanhshrink(x) + F.threshold(x, 0.1, -2.0),
    "addcmul_addcdiv": lambda x: torch.addcmul(x, x, x.flip(0), value=0.5) + x.addcdiv(x, x.abs() + 1, value=-2),
    "cosine_pairwise_cdist": lambda x: F.cosine_similarity(x, x.roll(1, 0), dim=-1).sum(-1) + F.pairwise_distance(x[:, 0], x[:, 1])
    + torch.cdist(x, x).sum((1, 2)),
    "pixel_shuffle_unshuffle": lambda x: F.pixel_unshuffle(F.pixel_shuffle(x.reshape(x.shape[0], 4, 3, 2), 2), 2),
    "prelu_softmin_logit": lambda x: F.prelu(x, torch.tensor([0.1, 0.2, 0.3, 0.4])) + F.softmin(x, -1) + torch.logit(torch.sigmoid(x), 1e-6),
    "logaddexp_xlogy_copysign": lambda x: torch.logaddexp(x, 2 * x) + torch.xlogy(x.abs(), x.abs() + 1) + torch.copysign(x, -x.flip(1))
    + torch.logaddexp2(x, x.T.flip(0).T),
    "erfc_erfinv_sinc_heaviside": lambda x: torch.erfc(x) + torch.erfinv(torch.tanh(x) * 0.9) + torch.sinc(x)
    + torch.heaviside(x, torch.tensor(0.5)),
    "median_quantile_kthvalue_mode": lambda x: torch.median(x, -1).values + torch.quantile(x, 0.3, dim=-1)
    + torch.kthvalue(x, 2, -1).values + torch.nanmedian(x, -1).values + torch.mode(x.round(), -1).values,
    "nonzero_masked_select": lambda x: torch.cat([torch.nonzero(x > 0).float().sum(0), torch.masked_select(x, x > 0.5).sum()[None]]),
    "isin_searchsorted_bincount": lambda x: torch.isin((x * 3).round().long(), torch.tensor([0, 1])).sum(0)
    + torch.searchsorted(W, x.contiguous()).sum(0) + torch.bincount((x.abs() * 2).long().flatten(), minlength=12)[:6],
    "diag_trace_tensordot_kron": lambda x: torch.diag(x[0, :, :4]).sum() + torch.trace(x[0, :, :4])
    + torch.tensordot(x, x, dims=([1, 2], [1, 2])) + torch.kron(x[0, :2, :2], x[-1, :2, :2]).sum(),
    "unflatten_swapdims_diagonal": lambda x: x.unflatten(-1, (2, 3)).swapdims(1, 3).diagonal(0, 1, 2).sum(-1),
    "losses": lambda x: (F.l1_loss(x, x * 0.5) + F.huber_loss(x, x * 0.3) + F.smooth_l1_loss(x, -x)
                         + F.binary_cross_entropy_with_logits(x, torch.sigmoid(2 * x))
                         + F.nll_loss(F.log_softmax(x[:, :, 0], -1), torch.arange(x.shape[0]) % 4)
                         + F.kl_div(F.log_softmax(x, -1), F.softmax(-x, -1), reduction="batchmean")).expand(x.shape[0]),
    "cummax_logcumsumexp_index_add": lambda x: torch.cummax(x, 1).values + torch.logcumsumexp(x, 2)
    + x.index_add(2, torch.tensor([0, 2]), x[:, :, :2]) + x.index_fill(1, torch.tensor([1]), -1.0),
    # Schemas that bind torch's overloads by name since they lower to ONNX (issue 11): keywords and
    # positionals of each overload replay.
    "prod_count_nonzero_aminmax_var_mean": lambda x: (x.prod(2, keepdim=True).squeeze(2) + torch.prod(x, dim=2, dtype=torch.float64).float()
                                                      + torch.count_nonzero(x.round(), dim=(0, 2)).float() + x.round().count_nonzero(2)
                                                      + torch.aminmax(x, dim=2).max + x.aminmax(dim=-1, keepdim=True)[0].squeeze(-1)
                                                      + torch.var_mean(x, 2)[0] + torch.std_mean(x, dim=2, correction=0)[1]
                                                      + torch.var_mean(x, False)[1] + torch.prod(x)),
    "aliases": lambda x: torch.absolute(x) + torch.arccos(x.clamp(-0.9, 0.9)) + torch.clamp_min(x, 0.1)
    + x.clamp_max(0.2) + torch.fix(3 * x) + torch.greater(x, 0) + torch.arctan2(x, x.flip(0)),
    # Session 14: torch.special, torch.linalg, torch.fft, complex parts, Tensor.tile and the shifts
    # were not listed either.
    "special": lambda x: torch.special.erf(x) + torch.special.expit(x) + torch.special.i0e(x)
    + torch.special.log_ndtr(x) + torch.special.xlogy(x.abs(), x.abs() + 1) + torch.special.entr(x.abs()),
    "linalg": lambda x: torch.linalg.inv(x[:, :, :4] @ x[:, :, :4].mT + torch.eye(4))
    + torch.linalg.norm(x, dim=(-2, -1), keepdim=True) + torch.linalg.svdvals(x)[:, :, None]
    + torch.linalg.vecdot(x, x.flip(2))[:, :, None],
    "fft_complex": lambda x: torch.fft.irfft(torch.fft.rfft(x), n=6) + torch.fft.fftshift(torch.fft.fft(x)).angle()
    + torch.view_as_real(torch.complex(x, 2 * x))[..., 1] + torch.fft.ifft(torch.fft.fft(x)).real,
    # Session 15: ATen spellings (int reductions, ATen parameter orders), the *_copy ops, writes
    # (put, index_put, masked_scatter, scatter_reduce, index_reduce, diagonal_scatter) and pooling
    # with indices / unpooling, now with canonical ops and ONNX lowerings.
    "aten_spellings_copies": lambda x: (torch.kl_div(x, x.flip(0), 1, log_target=True), torch.margin_ranking_loss(x, x.flip(0), x.sign(), 0.5, 0),
                                        torch.embedding(W.reshape(3, 2), (x.abs() * 2).long().clamp(max=2)), torch.constant_pad_nd(x, [1, 0], 0.5),
                                        torch.convolution(x, torch.ones(2, 4, 3), None, [1], [1], [1], False, [0], 1),
                                        torch.slice_copy(x, 2, 1, None, 2), torch.view_copy(x, [-1, 6]), torch.split_copy(x, 4, 2)[1],
                                        torch.select_copy(x, 1, -1), torch.threshold(x, 0.1, 2.0), torch.selu(x)),
    "writes_pooling_with_indices": lambda x: (x.put(torch.tensor([0, 5]), torch.tensor([1.0, 2.0])),
                                              x.index_put((torch.tensor([0]), torch.tensor([1, 1])), torch.tensor(3.0), accumulate=True),
                                              x.masked_scatter(x > 0, x.flip(0) * 2), x.scatter_reduce(2, (x.abs() * 3).long().clamp(max=5), x, "amax"),
                                              x.index_reduce(1, torch.tensor([0, 0, 2, 3]), x * 2, "mean", include_self=False),
                                              torch.diagonal_scatter(x, x[:, 0, :4], 0, 1, 2),
                                              F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2),
                                              F.adaptive_max_pool1d(x, 3, return_indices=True)[1], F.pdist(x[:, 0])),
    "tile_shifts": lambda x: x.tile(1, 1, 2)[:, :, 3:9] + ((x * 10).long() << 2) + (1 & (x * 10).long())
    + ((x * 10).long() >> 1),
    # Issue 11 (specfn): positional/keyword spellings of the torch.special aliases, polygamma's two
    # argument orders (torch.polygamma(n, x), x.polygamma(n)), the reflected dunders and shifts.
    "special_aliases_gamma_shifts": lambda x: (torch.special.softmax(x, 2) + torch.special.log_softmax(x, 2, dtype=torch.float64).float()
                                               + torch.special.round(x, decimals=1) + torch.special.logit(x.sigmoid(), eps=1e-3)
                                               + torch.special.logsumexp(x, 2, keepdim=True) + torch.row_stack((x, x))[: x.shape[0]]
                                               + torch.polygamma(1, x.abs() + 1) + (x.abs() + 1).polygamma(0) + torch.special.polygamma(1, x.abs() + 1)
                                               + torch.special.gammaln(x.abs() + 0.5) + torch.special.multigammaln(x.abs() + 2, 2)
                                               + torch.mvlgamma(x.abs() + 2, p=3) + torch.special.ndtri(x.sigmoid()) + torch.special.i1(x)
                                               + (3 | (x * 10).long()) + (5 ^ (x * 10).long()) + (3 << (x * 3).abs().long())
                                               + ((1 << 40) >> (x * 3).abs().long()) + torch.bitwise_left_shift((x * 10).long(), 2)
                                               + torch.gcd((x * 10).long(), torch.tensor(4)) + torch.angle(x) + torch.conj(x)),
    # Issue 11 item 2: torch.fft (axis= as dim's alias), stft/istft, complex parts and arithmetic.
    "fft_stft": lambda x: (torch.fft.fftn(x, dim=(1, 2)).real + torch.fft.irfft(torch.fft.rfft(x, axis=2) * 2, n=6).abs()
                           + torch.view_as_real(torch.fft.fft(x) * torch.complex(x, x)).sum(-1) + torch.fft.ihfft(x).resolve_conj().imag.sum()
                           + torch.istft(torch.stft(x.flatten(1), 8, hop_length=2, window=torch.ones(8), return_complex=True), 8,
                                         hop_length=2, window=torch.ones(8), length=24).reshape(x.shape)),
    # Issue 11 item 2: histogram (range=, weight= keywords), histogramdd, norm_except_dim, new_tensor, renorm_.
    "histograms_norm_except_dim_new_tensor": lambda x: (torch.histogram(x.flatten(), 5, range=(-1.0, 1.0), weight=x.abs().flatten()).hist,
                                                        torch.histogramdd(x[:, 0, :2], bins=[2, 3], density=True).hist,
                                                        torch.histogram(x, torch.tensor([-1.0, 0.0, 2.0]))[0], torch.norm_except_dim(x, 2, 1),
                                                        x + x.new_tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), x.clone().renorm_(2, 0, 1.0)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_function_replays_at_a_new_batch(name, ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)
    fn = PROGRAMS[name]
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ivytrace.trace_graph(fn, args=(torch.randn(3, 4, 6, generator=g),))
    for b in (3, 5, 1):
        x = torch.randn(b, 4, 6, generator=g)
        got, want = traced(x), fn(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_aliases_of_canonical_ops_export_to_onnx(tmp_path, ivytrace_bin, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)
    fn = PROGRAMS["aliases"]
    path = str(tmp_path / "m.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ivytrace.export(fn, path, args=(torch.randn(3, 4, 6),))
    sess = ort.InferenceSession(path)
    for b in (3, 5):
        x = torch.randn(b, 4, 6)
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        torch.testing.assert_close(torch.from_numpy(got), fn(x), rtol=1e-5, atol=1e-6)
