"""headscan's sequence-mixer operators (analyzer/model/sequence_mixers.cpp, headscan/_export/mixer_ops.py)
against transformers' torch reference functions, at lengths within one chunk, at a chunk's edges and
far beyond (16, 63, 64, 65, 200, 1,024 and 4,096 tokens): the C++ kernels of headscan._core are
what runs (checked), and each equals its reference bit for bit; the fake kernels give the
shape and dtype with the length symbolic; and the replacement of the references while exporting
calls the operator only where the call has no recurrent state.
HEADSCAN_MIXER_LENGTHS (comma-separated) narrows the lengths."""

import os

import pytest
import torch

import headscan  # noqa: F401 - loads headscan._core, whose C++ kernels define the operators
from headscan._export import mixer_ops

ALL_LENGTHS = (16, 63, 64, 65, 200, 1024, 4096)
LENGTHS = tuple(int(n) for n in os.environ.get("HEADSCAN_MIXER_LENGTHS", ",".join(map(str, ALL_LENGTHS))).split(","))

OPS = mixer_ops.define()


def close(found, expected):
    """Equal bit for bit: the kernels repeat the references' operations on tensors of the same
    shapes and layouts, in the same process (the same ATen kernels and threads)."""
    assert found.shape == expected.shape and found.dtype == expected.dtype, (found.shape, expected.shape,
                                                                           found.dtype, expected.dtype)
    assert torch.equal(found, expected), f"differs by {(found - expected).abs().max().item():.3g}"
    # Contiguous, as the fake kernels say (a program traced with them views the result).
    assert found.is_contiguous(), found.stride()


@pytest.mark.parametrize("name", sorted(mixer_ops.SCHEMAS))
def test_cpp_kernels_are_registered(name):
    """The operators run headscan._core's C++ kernels, not mixer_ops' Python ones."""
    dump = torch._C._dispatch_dump(f"headscan::{name}")
    assert "sequence_mixers.cpp" in dump, dump


def gated_delta_inputs(length, generator, *, batch=2, heads=4, k_dim=16, v_dim=16):
    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    query, key = normal(batch, length, heads, k_dim), normal(batch, length, heads, k_dim)
    value = normal(batch, length, heads, v_dim)
    # As Qwen3-Next computes them: beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias) ≤ 0.
    beta = normal(batch, length, heads).sigmoid()
    g = -torch.rand(heads, generator=generator).mul(4).exp() * torch.nn.functional.softplus(normal(batch, length, heads))
    return query, key, value, g, beta


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("chunk_size", [64, 16])
def test_gated_delta_rule(length, chunk_size):
    generator = torch.Generator().manual_seed(length + chunk_size)
    query, key, value, g, beta = gated_delta_inputs(length, generator)
    expected, _ = mixer_ops.reference("gated_delta_rule")(query, key, value, g=g, beta=beta, chunk_size=chunk_size,
                                                          use_qk_l2norm_in_kernel=True)
    close(OPS["gated_delta_rule"](query, key, value, g, beta, chunk_size, True), expected)


def test_gated_delta_rule_without_l2norm_and_in_bfloat16():
    generator = torch.Generator().manual_seed(1)
    inputs = [x.to(torch.bfloat16) for x in gated_delta_inputs(65, generator)]
    expected, _ = mixer_ops.reference("gated_delta_rule")(*inputs[:3], g=inputs[3], beta=inputs[4],
                                                          use_qk_l2norm_in_kernel=False)
    close(OPS["gated_delta_rule"](*inputs, 64, False), expected)


def ssd_inputs(length, generator, *, batch=2, heads=4, head_dim=16, groups=2, state=16):
    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    return dict(hidden_states=normal(batch, length, heads, head_dim), dt=normal(batch, length, heads),
                A=-torch.rand(heads, generator=generator).mul(4).exp(), B=normal(batch, length, groups, state),
                C=normal(batch, length, groups, state), D=normal(heads), dt_bias=normal(heads))


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("chunk_size", [32, 256])
def test_ssd_scan(length, chunk_size):
    generator = torch.Generator().manual_seed(length + chunk_size)
    x = ssd_inputs(length, generator)
    # Mamba-2's time_step_limit, as Granite 4 and Nemotron-H set it, and the default (0, inf).
    for limit in ((0.0, float("inf")), (0.001, 0.1)):
        expected = mixer_ops.reference("ssd_scan")(x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], chunk_size,
                                                   D=x["D"], dt_bias=x["dt_bias"], dt_softplus=True, dt_limit=limit)
        found = OPS["ssd_scan"](x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], chunk_size, x["D"], x["dt_bias"],
                                True, *limit)
        close(found, expected)


def test_ssd_scan_without_D_and_bias():
    generator = torch.Generator().manual_seed(2)
    x = ssd_inputs(70, generator, groups=1)
    expected = mixer_ops.reference("ssd_scan")(x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], 32)
    close(OPS["ssd_scan"](x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], 32, None, None, False, 0.0,
                          float("inf")), expected)


def selective_inputs(length, generator, *, batch=2, inner=32, state=8):
    def normal(*shape):
        return torch.randn(*shape, generator=generator)

    return dict(hidden_states=normal(batch, inner, length), dt=normal(batch, inner, length),
                A=-torch.rand(inner, state, generator=generator).mul(3).exp(), B=normal(batch, state, length),
                C=normal(batch, state, length), D=normal(inner), z=normal(batch, inner, length),
                delta_bias=normal(inner))


@pytest.mark.parametrize("length", LENGTHS)
def test_selective_scan(length):
    generator = torch.Generator().manual_seed(length)
    x = selective_inputs(length, generator)
    expected = mixer_ops.reference("selective_scan")(x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], D=x["D"],
                                                     z=x["z"], delta_bias=x["delta_bias"], delta_softplus=True)
    found = OPS["selective_scan"](x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], x["D"], x["z"],
                                  x["delta_bias"], True)
    close(found, expected)


def test_selective_scan_without_gate():
    generator = torch.Generator().manual_seed(3)
    x = selective_inputs(20, generator)
    dt = x["dt"].abs()  # a step ≥ 0 without softplus
    expected = mixer_ops.reference("selective_scan")(x["hidden_states"], dt, x["A"], x["B"], x["C"])
    close(OPS["selective_scan"](x["hidden_states"], dt, x["A"], x["B"], x["C"], None, None, None, False), expected)


def test_kernels_refuse_wrong_shapes():
    generator = torch.Generator().manual_seed(4)
    query, key, value, g, beta = gated_delta_inputs(10, generator)
    with pytest.raises(RuntimeError, match=r"beta must be \[2, 10"):
        OPS["gated_delta_rule"](query, key, value, g, beta[:, :5], 64, True)
    x = ssd_inputs(10, generator, groups=3, heads=4)
    with pytest.raises(RuntimeError, match="groups dividing the 4 heads"):
        OPS["ssd_scan"](x["hidden_states"], x["dt"], x["A"], x["B"], x["C"], 32, None, None, False, 0.0, 1.0)


def test_fake_kernels_keep_the_length_symbolic():
    """torch.export of each operator with a dynamic length: one program for every length."""
    class Mixers(torch.nn.Module):
        def forward(self, query, key, value, g, beta, hidden, dt, A, B, C, D, x, dt2, A2, B2, C2, z):
            return (OPS["gated_delta_rule"](query, key, value, g, beta, 64, True),
                    OPS["ssd_scan"](hidden, dt, A, B, C, 32, D, None, True, 0.0, float("inf")),
                    OPS["selective_scan"](x, dt2, A2, B2, C2, None, z, None, True))

    generator = torch.Generator().manual_seed(5)

    def inputs(length):
        s, m = ssd_inputs(length, generator), selective_inputs(length, generator)
        return (*gated_delta_inputs(length, generator), s["hidden_states"], s["dt"], s["A"], s["B"], s["C"], s["D"],
                m["hidden_states"], m["dt"], m["A"], m["B"], m["C"], m["z"])

    T = torch.export.Dim("T", min=2, max=8192)
    dims = ({1: T},) * 5 + ({1: T}, {1: T}, None, {1: T}, {1: T}, None) + ({2: T}, {2: T}, None, {2: T}, {2: T}, {2: T})
    program = torch.export.export(Mixers(), inputs(20), dynamic_shapes=dims)
    targets = {node.target for node in program.graph.nodes if node.op == "call_function"}
    assert set(OPS.values()) <= targets
    for length in (7, 65):
        arguments = inputs(length)
        for found, expected in zip(program.module()(*arguments), Mixers()(*arguments)):
            assert torch.equal(found, expected)
        assert program.module()(*arguments)[0].shape == (2, length, 4, 16)


def test_replacement_only_without_state():
    """While exporting, a reference called with a recurrent state (a cached forward) is itself."""
    calls = []

    def original(*args, **kwargs):
        calls.append(kwargs)
        return "original"

    replacement = mixer_ops.CALLS["ssd_scan"](original, lambda *args: "operator")
    assert replacement(None, None, None, None, None, 32, return_final_states=True) == "original"
    assert replacement(None, None, None, None, None, 32, dt_limit=(0.0, 1.0)) == "operator"
    replacement = mixer_ops.CALLS["gated_delta_rule"](original, lambda *args: "operator")
    assert replacement(None, None, None, None, None, initial_state=torch.zeros(1)) == "original"
    assert replacement(None, None, None, None, None) == ("operator", None)


def test_every_family_holds_the_reference():
    """The copies in the hybrids' modeling files are the reference's source, so they are replaced
    while exporting (a copy that differed would not be, and the model would be refused as before)."""
    import importlib

    copies = {"gated_delta_rule": ["qwen3_next", "qwen3_5", "qwen3_5_moe", "olmo_hybrid"],
              "ssd_scan": ["mamba2", "granitemoehybrid", "nemotron_h", "falcon_h1"],
              "selective_scan": ["mamba", "jamba"]}
    for name, families in copies.items():
        function = mixer_ops.REFERENCES[name][1]
        for family in families:
            module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
            assert mixer_ops._source(getattr(module, function)) == mixer_ops._source(mixer_ops.reference(name)), family


def test_gradients_are_the_references():
    """The operators' Python gradient (registered where headscan._core is not loaded: the reference
    recomputed) is the reference's; with headscan._core, the C++ Autograd kernel differentiates
    their own operations where an input requires grad, to the same gradient."""
    import types

    generator = torch.Generator().manual_seed(6)
    s, m = ssd_inputs(70, generator), selective_inputs(30, generator)
    cases = [
        ("gated_delta_rule", list(gated_delta_inputs(70, generator)) + [64, True]),
        ("ssd_scan", [s[k] for k in ("hidden_states", "dt", "A", "B", "C")] + [32, s["D"], s["dt_bias"], True, 0.0,
                                                                                 float("inf")]),
        ("selective_scan", [m[k] for k in ("hidden_states", "dt", "A", "B", "C", "D", "z", "delta_bias")] + [True]),
    ]
    for name, arguments in cases:
        tensors = mixer_ops.TENSORS[name]
        inputs = [x.clone().requires_grad_() if i in tensors else x for i, x in enumerate(arguments)]
        output = mixer_ops.KERNELS[name](*inputs)
        grad = torch.randn(output.shape, generator=generator)
        expected = torch.autograd.grad(output, [inputs[i] for i in tensors], grad)
        context = types.SimpleNamespace(inputs=tuple(arguments),
                                        needs_input_grad=[i in tensors for i in range(len(arguments))])
        found = [g for i, g in enumerate(mixer_ops._backward(name)(context, grad)) if i in tensors]
        for a, b in zip(found, expected):
            assert torch.equal(a, b), (name, (a - b).abs().max())
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"headscan::{name}", "Autograd")
        through_op = torch.autograd.grad(OPS[name](*inputs), [inputs[i] for i in tensors], grad)
        for a, b in zip(through_op, expected):
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (name, (a - b).abs().max())


def mamba_selective_scan(hidden_states, dt, A, B, C, **kwargs):  # noqa: ARG001 - a copy that differs
    return hidden_states * 2


class DifferentCopy(torch.nn.Module):
    def forward(self, x):
        return mamba_selective_scan(x, x, x, x, x)


def test_a_copy_that_differs_is_named():
    """A module calling a copy of a reference whose source differs keeps it while exporting, and
    a refusal for data-dependent control flow names the module."""
    from headscan._export import ExportInputError

    model = torch.nn.Sequential(DifferentCopy())
    assert mixer_ops.reference_copies(model) == []
    assert mixer_ops.unreplaced_mixers(model) == [("0", "DifferentCopy", f"{__name__}.mamba_selective_scan")]
    with pytest.raises(ExportInputError, match=r"^data-dependent control flow: a loop; 0 \(DifferentCopy\) calls "):
        with mixer_ops.naming_unreplaced_mixers(model):
            raise ExportInputError("data-dependent control flow: a loop")
    with pytest.raises(ExportInputError, match="^another reason$"):
        with mixer_ops.naming_unreplaced_mixers(model):
            raise ExportInputError("another reason")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fake_kernels_give_the_kernels_dtype(dtype):
    """A model in bfloat16 passes its activations in bfloat16 and some parameters in float32 (Jamba's
    D.float(), Mamba-2's A): the fake kernels' dtypes are the kernels', whose values are the
    references'."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    generator = torch.Generator().manual_seed(7)
    s, m = ssd_inputs(40, generator), selective_inputs(40, generator)
    calls = [
        ("gated_delta_rule", [x.to(dtype) for x in gated_delta_inputs(40, generator)] + [64, True]),
        ("ssd_scan", [s[k].to(dtype) for k in ("hidden_states", "dt")] + [s["A"]] +
         [s[k].to(dtype) for k in ("B", "C")] + [32, s["D"].to(dtype), s["dt_bias"].to(dtype), True, 0.0, 1.0]),
        ("selective_scan", [m[k].to(dtype) for k in ("hidden_states", "dt")] + [m["A"]] +
         [m[k].to(dtype) for k in ("B", "C")] + [m["D"], m["z"].to(dtype), m["delta_bias"].to(dtype), True]),
    ]
    for name, arguments in calls:
        real = OPS[name](*arguments)
        with FakeTensorMode() as mode:
            fake = OPS[name](*[mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in arguments])
        assert (fake.shape, fake.dtype) == (real.shape, real.dtype), (name, fake.dtype, real.dtype)
        close(real, mixer_ops.KERNELS[name](*arguments))  # the reference, called as the Python kernel does
