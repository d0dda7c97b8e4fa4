"""The sequence mixers of hybrid models that are not attention, as operators of headscan's own, so
that their exported programs take any length (transformers' torch fallbacks loop over chunks or
tokens in Python, which torch.export fixes at the example's length):

    headscan::gated_delta_rule(Tensor query, Tensor key, Tensor value, Tensor g, Tensor beta,
                               int chunk_size, bool use_qk_l2norm) -> Tensor
        transformers' torch_chunk_gated_delta_rule (Qwen3-Next, Qwen3.5, Qwen3.5-MoE, OLMo hybrid)
        without a recurrent state in or out: query and key [B, T, H, Dk], value [B, T, H, Dv],
        g and beta [B, T, H]; the output [B, T, H, Dv] in the query's dtype;
    headscan::ssd_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, int chunk_size,
                       Tensor? D, Tensor? dt_bias, bool dt_softplus, float dt_min, float dt_max) -> Tensor
        Mamba-2's SSD scan, transformers' mamba2_chunk_scan (Mamba-2, Granite 4 hybrid, Nemotron-H,
        Falcon-H1) without states in or out: hidden_states [B, T, H, P], dt [B, T, H], A [H],
        B and C [B, T, G, N]; the output [B, T, H, P] in float32 (promoted with D's dtype);
    headscan::selective_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, Tensor? D,
                             Tensor? z, Tensor? delta_bias, bool delta_softplus) -> Tensor
        Mamba's selective scan, transformers' mamba_selective_scan in its recurrent form (Mamba,
        Jamba): hidden_states, dt and z [B, D, T], A [D, N], B and C [B, N, T]; the output [B, D, T].

The short causal convolutions these layers carry (causal_conv1d_fn: a depthwise conv1d padded by
kernel - 1 and cut to the length) are length-dynamic ATen already and stay as they are.

headscan's C++ core (analyzer/model/sequence_mixers.cpp) defines the operators with kernels of ATen
for NativeRT; where it is not loaded they are defined here with kernels that call transformers'
reference functions. Their fake implementations (shapes only, the length symbolic) are registered
here in either case, by define(), and, where C++ gives them no Autograd kernel (its
differentiable_kernel, for headscan's importance pass), their gradients (the references' own,
recomputed). length_dynamic_mixers() puts the operators in place of the reference functions while
torch.export traces a model; naming_unreplaced_mixers() names, in a refusal, the modules whose
copy of a reference differs and so was traced as it is.
"""

import contextlib
import functools
import importlib
import inspect
import logging
import sys

import torch

from . import ExportInputError
from .ops import define_operator

SCHEMAS = {
    "gated_delta_rule": "gated_delta_rule(Tensor query, Tensor key, Tensor value, Tensor g, Tensor beta, "
                        "int chunk_size, bool use_qk_l2norm) -> Tensor",
    "ssd_scan": "ssd_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, int chunk_size, Tensor? D, "
                "Tensor? dt_bias, bool dt_softplus, float dt_min, float dt_max) -> Tensor",
    "selective_scan": "selective_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, Tensor? D, "
                      "Tensor? z, Tensor? delta_bias, bool delta_softplus) -> Tensor",
}
# Each operator's reference: (transformers' module, the function's name). The other families hold
# copies of it (modeling files are generated from one another); a copy whose source differs is not
# replaced (reference_copies()).
REFERENCES = {
    "gated_delta_rule": ("transformers.models.qwen3_next.modeling_qwen3_next", "torch_chunk_gated_delta_rule"),
    "ssd_scan": ("transformers.models.mamba2.modeling_mamba2", "mamba2_chunk_scan"),
    "selective_scan": ("transformers.models.mamba.modeling_mamba", "mamba_selective_scan"),
}
_LIBRARIES = []  # kept alive: torch drops a registration when its Library object is collected


@functools.lru_cache(maxsize=None)
def reference(name):
    """transformers' torch function for operator `name`, without the decorator that would call a
    hub kernel or a CUDA package (mamba_ssm, fla) in its place."""
    module, function = REFERENCES[name]
    return inspect.unwrap(getattr(importlib.import_module(module), function))


@functools.lru_cache(maxsize=None)
def _source(function):
    try:
        return inspect.getsource(inspect.unwrap(function)).split("\n", 1)[1]  # the body, not the name
    except (OSError, TypeError):
        return None


def _gated_delta_rule_kernel(query, key, value, g, beta, chunk_size, use_qk_l2norm):
    output, _ = reference("gated_delta_rule")(query, key, value, g=g, beta=beta, chunk_size=chunk_size,
                                              initial_state=None, output_final_state=False,
                                              use_qk_l2norm_in_kernel=use_qk_l2norm)
    return output.contiguous()


def _ssd_scan_kernel(hidden_states, dt, A, B, C, chunk_size, D, dt_bias, dt_softplus, dt_min, dt_max):
    output = reference("ssd_scan")(hidden_states, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias,
                                   initial_states=None, dt_softplus=dt_softplus, dt_limit=(dt_min, dt_max),
                                   return_final_states=False)
    return output.contiguous()


def _selective_scan_kernel(hidden_states, dt, A, B, C, D, z, delta_bias, delta_softplus):
    output = reference("selective_scan")(hidden_states, dt, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                         delta_softplus=delta_softplus, return_last_state=False,
                                         use_mambapy=False, use_associative_scan=False)
    return output.contiguous()


def _gated_delta_rule_fake(query, key, value, g, beta, chunk_size, use_qk_l2norm):
    return value.new_empty(value.shape, dtype=query.dtype)


def _ssd_scan_fake(hidden_states, dt, A, B, C, chunk_size, D, dt_bias, dt_softplus, dt_min, dt_max):
    dtype = torch.promote_types(torch.float32, D.dtype) if D is not None else torch.float32
    return hidden_states.new_empty(hidden_states.shape, dtype=dtype)


def selective_scan_dtype(hidden_states, C, D, z):
    """The dtype of mamba_selective_scan's output: the state read by C in the input's dtype, plus
    the input times D, times silu(z)."""
    dtype = torch.promote_types(hidden_states.dtype, C.dtype)
    if D is not None:
        dtype = torch.promote_types(dtype, torch.promote_types(hidden_states.dtype, D.dtype))
    if z is not None:
        dtype = torch.promote_types(dtype, z.dtype)
    return dtype


def _selective_scan_fake(hidden_states, dt, A, B, C, D, z, delta_bias, delta_softplus):
    return hidden_states.new_empty(hidden_states.shape, dtype=selective_scan_dtype(hidden_states, C, D, z))


KERNELS = {"gated_delta_rule": _gated_delta_rule_kernel, "ssd_scan": _ssd_scan_kernel,
           "selective_scan": _selective_scan_kernel}
FAKES = {"gated_delta_rule": _gated_delta_rule_fake, "ssd_scan": _ssd_scan_fake,
         "selective_scan": _selective_scan_fake}


# The operators' tensor arguments, in schema order (the others are ints, bools and floats).
TENSORS = {"gated_delta_rule": (0, 1, 2, 3, 4), "ssd_scan": (0, 1, 2, 3, 4, 6, 7),
           "selective_scan": (0, 1, 2, 3, 4, 5, 6, 7)}


def _setup_context(ctx, inputs, output):
    ctx.inputs = inputs


def _backward(name):
    """The gradient of operator `name`: its reference recomputed with autograd (the forward equals
    the reference bit for bit, so this is the reference's gradient). Python only: an exported
    program runs the operators without autograd (NativeRT runs in inference mode)."""
    def backward(ctx, grad):
        inputs = list(ctx.inputs)
        wanted = [i for i in TENSORS[name] if inputs[i] is not None and ctx.needs_input_grad[i]]
        with torch.enable_grad():
            for i in wanted:
                inputs[i] = inputs[i].detach().requires_grad_()
            output = KERNELS[name](*inputs)
            grads = torch.autograd.grad(output, [inputs[i] for i in wanted], grad, allow_unused=True)
        result = [None] * len(inputs)
        for i, each in zip(wanted, grads):
            result[i] = each
        return tuple(result)
    return backward


def _has_autograd(qualified_name):
    return torch._C._dispatch_has_kernel_for_dispatch_key(qualified_name, "Autograd")


def define():
    """Defines what is missing of the three operators (C++ may have defined them), their fake
    implementations and their gradients; returns {name: OpOverload}."""
    for name, schema in SCHEMAS.items():
        define_operator(name, schema, KERNELS[name], FAKES[name])
        if not _has_autograd(f"headscan::{name}"):
            library = torch.library.Library("headscan", "FRAGMENT")
            torch.library.register_autograd(f"headscan::{name}", _backward(name), setup_context=_setup_context,
                                            lib=library)
            _LIBRARIES.append(library)
    return {name: getattr(torch.ops.headscan, name).default for name in SCHEMAS}


# The replacements: transformers' signatures, the operator where the call has no state in or out
# (a forward without a cache, as headscan exports), else the function itself.

def _gated_delta_rule_call(original, op):
    def gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None, output_final_state=False,
                         use_qk_l2norm_in_kernel=False, **kwargs):
        if initial_state is not None or output_final_state:
            return original(query, key, value, g, beta, chunk_size=chunk_size, initial_state=initial_state,
                            output_final_state=output_final_state, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                            **kwargs)
        return op(query, key, value, g, beta, chunk_size, use_qk_l2norm_in_kernel), None
    return gated_delta_rule


def _ssd_scan_call(original, op):
    def ssd_scan(hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None, initial_states=None,
                 dt_softplus=False, dt_limit=(0.0, float("inf")), return_final_states=False, **kwargs):
        if initial_states is not None or return_final_states:
            return original(hidden_states, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias,
                            initial_states=initial_states, dt_softplus=dt_softplus, dt_limit=dt_limit,
                            return_final_states=return_final_states, **kwargs)
        return op(hidden_states, dt, A, B, C, chunk_size, D, dt_bias, dt_softplus, float(dt_limit[0]),
                  float(dt_limit[1]))
    return ssd_scan


def _mambapy():
    try:
        from transformers.utils.import_utils import is_mambapy_available
    except ImportError:
        return False
    return is_mambapy_available()


def _selective_scan_call(original, op):
    def selective_scan(hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                       return_last_state=False, use_mambapy=False, use_associative_scan=False, **kwargs):
        # With mambapy installed and asked for, the eager model scans in parallel (other rounding).
        if return_last_state or (use_mambapy and _mambapy()):
            return original(hidden_states, dt, A, B, C, D=D, z=z, delta_bias=delta_bias,
                            delta_softplus=delta_softplus, return_last_state=return_last_state,
                            use_mambapy=use_mambapy, use_associative_scan=use_associative_scan, **kwargs)
        return op(hidden_states, dt, A, B, C, D, z, delta_bias, delta_softplus)
    return selective_scan


CALLS = {"gated_delta_rule": _gated_delta_rule_call, "ssd_scan": _ssd_scan_call,
         "selective_scan": _selective_scan_call}


def reference_copies(model):
    """[(module, attribute, operator's name)] of the reference functions the model's modules call:
    the functions of REFERENCES' names in the modeling files of the model's classes whose source is
    the reference's."""
    modules = {sys.modules.get(type(each).__module__) for each in model.modules()} - {None}
    found = []
    for module in sorted(modules, key=lambda m: m.__name__):
        for name, (_, function) in REFERENCES.items():
            copy = getattr(module, function, None)
            if copy is None or not callable(copy):
                continue
            try:
                same = _source(copy) is not None and _source(copy) == _source(reference(name))
            except ImportError:  # a transformers without the reference's family
                same = False
            if same:
                found.append((module, function, name))
    return found


@contextlib.contextmanager
def length_dynamic_mixers(model):
    """While torch.export traces `model`: the reference functions of its modeling files call
    headscan's operators (where the call has no recurrent state), so the program takes any length."""
    copies = reference_copies(model)
    if not copies:
        yield []
        return
    ops = define()
    saved = []
    try:
        for module, function, name in copies:
            original = getattr(module, function)
            saved.append((module, function, original))
            setattr(module, function, CALLS[name](original, ops[name]))
        yield [f"{module.__name__}.{function}" for module, function, _ in copies]
    finally:
        for module, function, original in reversed(saved):
            setattr(module, function, original)


class _NoFallbackNotice(logging.Filter):
    def filter(self, record):
        return "falling back to its reference PyTorch implementation" not in record.getMessage()


def quiet_reference_fallbacks():
    """Silences transformers' notice that a mixer falls back to its torch reference (no mamba_ssm,
    causal_conv1d or flash-linear-attention installed): the export runs the references on purpose
    (the checks' eager model), and the program runs headscan's operators in their place."""
    logger = logging.getLogger("transformers.integrations.hub_kernels")
    if not any(isinstance(f, _NoFallbackNotice) for f in logger.filters):
        logger.addFilter(_NoFallbackNotice())


def _forward_names(module):
    """The global names the module's forward calls (its decorators unwrapped)."""
    forward = inspect.unwrap(type(module).forward)
    code = getattr(forward, "__code__", None)
    return set(code.co_names) if code is not None else set()


def unreplaced_mixers(model):
    """[(module path, class name, function)] of the model's modules whose forward calls a function of
    REFERENCES' names that length_dynamic_mixers() leaves in place (its source is not the
    reference's)."""
    replaced = {(module.__name__, function) for module, function, _ in reference_copies(model)}
    functions = {function for _, function in REFERENCES.values()}
    found = []
    for path, module in model.named_modules():
        modeling = type(module).__module__
        for function in sorted(_forward_names(module) & functions):
            if (modeling, function) not in replaced:
                found.append((path, type(module).__name__, f"{modeling}.{function}"))
    return found


@contextlib.contextmanager
def naming_unreplaced_mixers(model):
    """A refusal for data-dependent control flow names the model's modules whose sequence mixer
    headscan's operators do not replace, and why."""
    try:
        yield
    except ExportInputError as e:
        found = unreplaced_mixers(model)
        if not found or "data-dependent" not in str(e):
            raise
        shown = ", ".join(f"{path} ({name})" for path, name, _ in found[:3]) + (" and more" if len(found) > 3 else "")
        functions = ", ".join(sorted({function for _, _, function in found}))
        verb = "calls" if len(found) == 1 else "call"
        raise ExportInputError(f"{e}; {shown} {verb} {functions}, a copy of transformers' torch reference that "
                               "differs from the one headscan's length-dynamic operators compute (another "
                               "transformers version than 5.17?), so it was traced as it is") from e
