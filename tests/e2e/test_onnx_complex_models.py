"""Models that compute with complex intermediates and return real results, exported to ONNX with
their complex values carried as float pairs [..., 2] (core/export/onnx/lowerings_complex.cc):
transformers' FNet (`torch.fft.fftn(h, dim=(1, 2)).real` in every layer; small config, random
weights, no hub), a spectrogram front end (stft, |.|^2, a mel matmul, log) and Autoformer's
FFT autocorrelation (rfft, conj, irfft). Each is traced at
one shape, exported with `ivytrace export --to onnx` and run in onnxruntime against the model
itself at the traced shape and at other batch sizes and lengths. And what stays refused: a complex
graph output, and an op on a complex value whose lowering does not handle pairs.
"""
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ort = pytest.importorskip("onnxruntime")

import ivytrace  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _export(cli, tmp_path, fn, args, *extra):
    graph = ivytrace.trace_graph(fn, args=args)
    trace = graph.save(tmp_path / "m.ivt")
    out = tmp_path / "m.onnx"
    proc = cli("export", trace, "--to", "onnx", "-o", out, *extra)
    return out, proc


def _ort(path, *arrays):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), arrays)})


def test_fnet_exports_and_matches_at_other_batches_and_lengths(cli, tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.FNetConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                                     max_position_embeddings=64, type_vocab_size=2)
    torch.manual_seed(0)
    model = transformers.FNetModel(config).eval()

    def fnet(input_ids):
        with torch.no_grad():
            return model(input_ids)[0]
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 100, (2, 8), generator=g)
    out, proc = _export(cli, tmp_path, fnet, (ids,), "--allow-specialized")
    assert proc.returncode == 0, proc.stderr
    import onnx
    m = onnx.load(str(out))
    assert sum(n.op_type == "DFT" for n in m.graph.node) == 2 * config.num_hidden_layers   # fftn over 2 dims per layer
    for b, s in ((2, 8), (3, 8), (1, 13), (4, 32)):
        x = torch.randint(0, 100, (b, s), generator=g)
        want = fnet(x).numpy()
        (got,) = _ort(out, x.numpy())
        assert got.shape == want.shape, (b, s)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4, err_msg=f"FNet at batch {b}, length {s}")


class Spectrogram(torch.nn.Module):
    """A log-mel front end: stft (hann window, reflect padding), power, a mel matmul, log."""

    def __init__(self, n_fft=64, hop=16, n_mels=12):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        torch.manual_seed(0)
        self.register_buffer("mel", torch.rand(n_mels, n_fft // 2 + 1))

    def forward(self, wave):
        spec = torch.stft(wave, self.n_fft, hop_length=self.hop, window=self.window, return_complex=True)
        power = spec.abs() ** 2
        return torch.log(self.mel @ power + 1e-6)


def test_spectrogram_exports_and_matches_at_other_batches_and_lengths(cli, tmp_path):
    model = Spectrogram().eval()
    g = torch.Generator().manual_seed(0)
    wave = torch.randn(2, 400, generator=g)
    out, proc = _export(cli, tmp_path, lambda wave: model(wave), (wave,))
    assert proc.returncode == 0, proc.stderr
    for b, n in ((2, 400), (3, 400), (1, 257), (5, 1000)):
        x = torch.randn(b, n, generator=g)
        want = model(x).numpy()
        (got,) = _ort(out, x.numpy())
        assert got.shape == want.shape, (b, n)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4, err_msg=f"spectrogram at batch {b}, length {n}")


def test_autoformer_autocorrelation_exports_and_follows_the_length(cli, tmp_path):
    # Autoformer's AutoCorrelation: period-based dependencies from rfft(q) * conj(rfft(k)), back
    # with irfft of n = the sequence length (a size read from the input: the model follows it).
    def autocorr(q, k):
        q_fft = torch.fft.rfft(q.permute(0, 2, 3, 1).contiguous(), dim=-1)
        k_fft = torch.fft.rfft(k.permute(0, 2, 3, 1).contiguous(), dim=-1)
        corr = torch.fft.irfft(q_fft * torch.conj(k_fft), n=q.shape[1], dim=-1)
        return torch.mean(corr, dim=(1, 2))
    g = torch.Generator().manual_seed(0)
    args = (torch.randn(2, 12, 2, 4, generator=g), torch.randn(2, 12, 2, 4, generator=g))
    out, proc = _export(cli, tmp_path, autocorr, args)
    assert proc.returncode == 0, proc.stderr
    for b, n in ((2, 12), (3, 12), (2, 7), (4, 16)):
        q, k = torch.randn(b, n, 2, 4, generator=g), torch.randn(b, n, 2, 4, generator=g)
        want = autocorr(q, k).numpy()
        (got,) = _ort(out, q.numpy(), k.numpy())
        assert got.shape == want.shape, (b, n)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4, err_msg=f"autocorrelation at batch {b}, length {n}")


def test_a_complex_graph_output_is_refused(cli, tmp_path):
    out, proc = _export(cli, tmp_path, lambda x: torch.fft.rfft(x), (torch.randn(2, 8),))
    assert proc.returncode != 0
    assert "complex graph inputs and outputs are not exported" in proc.stderr, proc.stderr
    assert "view_as_real" in proc.stderr


def test_an_op_on_a_complex_value_without_a_pair_lowering_is_refused(cli, tmp_path):
    # exp and a reshape of a complex value: their lowerings do not handle the pairs (a reshape
    # would read the trailing dim of 2 as data), so the export names them instead of being wrong.
    def fn(x):
        z = torch.fft.fft(x)
        return torch.view_as_real(torch.exp(z)), torch.view_as_real(z.reshape(-1))
    out, proc = _export(cli, tmp_path, fn, (torch.randn(2, 8),))
    assert proc.returncode != 0
    assert "reads a complex value" in proc.stderr, proc.stderr
    assert "'exp'" in proc.stderr and "'reshape'" in proc.stderr, proc.stderr
