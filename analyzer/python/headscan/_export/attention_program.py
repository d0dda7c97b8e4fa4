"""The attention program: the exported program cut after its last attention map, packaged beside
the model's program ("model") as "attention" in the same .pt2 archive, its weights the model's own
records.

headscan's corpus pass reads attention only, so whatever follows the last headscan::attention or
headscan::observe node (the last layer's output projection and MLP, the final norm, the vocabulary
projection) is work it does not need. Stopping the forward there from inside the program would
mean an exception through NativeRT, which logs each one with two stack traces; a program that
ends there does not. The cut is the model's graph itself with its output moved to the last
attention node and dead code eliminated: every node it keeps is the model program's node, and the
placeholders of weights it no longer reads are dropped, so that NativeRT loads only the weights it
uses.
"""

import contextlib

import torch
import torch.utils._pytree as pytree
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind, OutputSpec, TensorArgument

from . import memory
from .ops import ATTENTION, OBSERVE

ATTENTION_PROGRAM = "attention"


def _is_observer(node):
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    return node.target._schema.name in (OBSERVE, ATTENTION)


def cut_after_attention(ep):
    """The program `ep` ending at its last headscan observer, which it returns, or None when the
    cut would leave out no work (no observer, or nothing computed after the last one) or would lose
    an observer."""
    nodes = list(ep.graph_module.graph.nodes)
    observers = [i for i, node in enumerate(nodes) if _is_observer(node)]
    if not observers or not any(node.op == "call_function" for node in nodes[observers[-1] + 1:]):
        return None
    graph = torch.fx.Graph()
    copied = {}
    for node in nodes[:observers[-1] + 1]:
        copied[node] = graph.node_copy(node, lambda n: copied[n])
    output = copied[nodes[observers[-1]]]
    graph.output((output,))
    graph.eliminate_dead_code()
    # An attention whose output the last one does not depend on (a branch beside the stack) would be
    # cut away: such a model runs its whole program instead.
    if sum(1 for node in graph.nodes if _is_observer(node)) != len(observers):
        return None
    signature = ep.graph_signature
    user_inputs = {spec.arg.name for spec in signature.input_specs if spec.kind == InputKind.USER_INPUT}
    for node in list(graph.nodes):
        if node.op == "placeholder" and not node.users and node.name not in user_inputs:
            graph.erase_node(node)
    kept = {node.name for node in graph.nodes if node.op == "placeholder"}
    input_specs = [spec for spec in signature.input_specs if spec.arg.name in kept]
    targets = {spec.target for spec in input_specs if spec.target is not None}
    module = torch.fx.GraphModule(ep.graph_module, graph)
    call_graph = []
    for entry in ep.module_call_graph:
        call_signature = entry.signature
        if entry.fqn == "" and call_signature is not None:
            call_signature = ModuleCallSignature(
                inputs=list(call_signature.inputs), outputs=[TensorArgument(name=output.name)],
                in_spec=call_signature.in_spec, out_spec=pytree.tree_structure(output),
                forward_arg_names=call_signature.forward_arg_names)
        call_graph.append(ModuleCallEntry(fqn=entry.fqn, signature=call_signature))
    return torch.export.ExportedProgram(
        root=module, graph=module.graph,
        graph_signature=ExportGraphSignature(
            input_specs=input_specs,
            output_specs=[OutputSpec(kind=OutputKind.USER_OUTPUT, arg=TensorArgument(name=output.name),
                                     target=None)]),
        state_dict={name: tensor for name, tensor in ep.state_dict.items() if name in targets},
        range_constraints=dict(ep.range_constraints), module_call_graph=call_graph,
        example_inputs=ep.example_inputs,
        constants={name: value for name, value in ep.constants.items() if name in targets},
        verifiers=ep.verifiers)


def compact_weights(ep):
    """Each storage of `ep`'s weights and constants that holds more bytes than its tensors read,
    copied to one that holds just those (the tensors viewing it as before, aliases kept):
    torch.export writes a tensor's whole storage as its record, and headscan refuses a record that
    holds more than its tensors read (NativeRT inflates all of it)."""
    def reads(tensor):
        if tensor.numel() == 0:
            return 0
        last = tensor.storage_offset() + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
        return (last + 1) * tensor.element_size()

    def compacted(tensors):
        groups = {}
        for name, tensor in tensors.items():
            if isinstance(tensor, torch.Tensor) and tensor.device.type != "meta" and tensor.numel() > 0:
                groups.setdefault(tensor.untyped_storage().data_ptr(), []).append(name)
        for names in groups.values():
            storage = tensors[names[0]].untyped_storage()
            needed = max(reads(tensors[name]) for name in names)
            if storage.nbytes() <= needed:
                continue
            copied = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, 0, (needed,)).clone()
            for name in names:
                tensor = tensors[name]
                view = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(
                    copied.untyped_storage(), tensor.storage_offset(), tensor.shape, tensor.stride())
                tensors[name] = (torch.nn.Parameter(view, requires_grad=tensor.requires_grad)
                                 if isinstance(tensor, torch.nn.Parameter) else view)

    with torch.no_grad():
        compacted(ep.state_dict)
        compacted(ep.constants)


class _Storage:
    """A tensor's whole storage (on the CPU), to be written as a record from its own memory."""

    def __init__(self, tensor):
        self.storage = tensor.cpu().untyped_storage()


@contextlib.contextmanager
def _records_from_storages():
    """Within the block, the archive's weight and constant records are written from the tensors'
    storages rather than from copies: torch's packaging copies each storage to a bytes object
    (_get_raw_tensor_bytes) before writing it, the embedding's alone 671 MB for Gemma 3 270M, and
    serializing each program pickles its whole state dict and constants to bytes it then leaves
    unused (the records are written apart, and package_programs writes only the program's JSON and
    its example inputs). The archive's bytes are the same."""
    from torch._export.serde import serialize as serde
    from torch.export.pt2_archive import _package

    raw_bytes, artifact_bytes = _package._get_raw_tensor_bytes, serde.serialize_torch_artifact

    def artifact(value, *args, **kwargs):
        # The state dict and the constants are dicts; the example inputs, (args, kwargs).
        return b"" if isinstance(value, dict) else artifact_bytes(value, *args, **kwargs)

    def storage(value):
        if _package._is_fake_tensor(value) or not value.data_ptr():
            return raw_bytes(value)
        return _Storage(value)

    _package._get_raw_tensor_bytes, serde.serialize_torch_artifact = storage, artifact
    try:
        yield
    finally:
        _package._get_raw_tensor_bytes, serde.serialize_torch_artifact = raw_bytes, artifact_bytes


def package_programs(f, ep, extra_files):
    """Writes the .pt2 archive of `ep` to `f` (a path or a writable, seekable file) as torch.export's
    package_pt2 does, with the attention program beside it (cut_after_attention) where the cut
    leaves work out: its weights configuration names the model's weight records, so the archive
    holds each weight once. Each weight is written from its tensor's memory, without a copy
    (_records_from_storages)."""
    from torch.export.pt2_archive._package import (PT2ArchiveWriter, _package_constants, _package_extra_files,
                                                   _package_payload_config, _package_state_dict)
    from torch.export.pt2_archive.constants import (CONSTANTS_CONFIG_FILENAME_FORMAT, MODELS_FILENAME_FORMAT,
                                                    SAMPLE_INPUTS_FILENAME_FORMAT,
                                                    WEIGHTS_CONFIG_FILENAME_FORMAT)
    from torch._export.serde.schema import PayloadConfig
    from torch._export.serde.serialize import serialize

    class Writer(PT2ArchiveWriter):
        def write_bytes(self, name, data):
            if isinstance(data, _Storage):
                self.archive_file.write_record(name, data.storage, data.storage.nbytes())
            else:
                super().write_bytes(name, data)

    def write_program(writer, name, program, weights, constants):
        _package_payload_config(writer, weights, WEIGHTS_CONFIG_FILENAME_FORMAT.format(name))
        _package_payload_config(writer, constants, CONSTANTS_CONFIG_FILENAME_FORMAT.format(name))
        artifact = serialize(program)
        writer.write_bytes(MODELS_FILENAME_FORMAT.format(name), artifact.exported_program)
        writer.write_bytes(SAMPLE_INPUTS_FILENAME_FORMAT.format(name), artifact.example_inputs)

    compact_weights(ep)
    cut = cut_after_attention(ep)
    with memory.frozen(), _records_from_storages(), Writer(f) as writer:
        weights = _package_state_dict("model", ep, writer)
        constants = _package_constants("model", ep, writer)
        write_program(writer, "model", ep, weights, constants)
        if cut is not None:
            write_program(writer, ATTENTION_PROGRAM, cut,
                          PayloadConfig(config={k: v for k, v in weights.config.items() if k in cut.state_dict}),
                          PayloadConfig(config={k: v for k, v in constants.config.items() if k in cut.constants}))
        _package_extra_files(writer, extra_files)
    if not isinstance(f, (str, bytes)) and hasattr(f, "seek"):
        f.seek(0)
