"""What the exported program computes, written with operators NativeRT's kernels run.

explicit_scalars: torch.export records `tensor // 32` as aten.floor_divide.default(tensor, 32):
    Python's dispatcher wraps the 32 into a tensor when the program runs in Python, NativeRT's does
    not ("Exception while executing node ... floor_divide"). Each such call takes the operator's
    .Scalar overload where it has one with the same arguments, else the number as a 0-dimensional
    tensor (aten.scalar_tensor).
real_complex_products: NativeRT's CPU kernel of aten.mul has no complex types ("mul_Scalar_out not
    implemented for 'ComplexFloat'", Llama 4's rotary embedding): a product of complex tensors is
    computed on their real and imaginary parts, (a + bi)(c + di) = (ac - bd) + (ad + bc)i, and a
    complex tensor times a real number scales both parts.
"""

import torch


def _is_tensor(argument):
    return isinstance(argument.type, torch.TensorType)


def _is_number(value):
    return isinstance(value, (bool, int, float))


def _scalar_overload(target, positions):
    """The packet's overload taking a Scalar at `positions` and otherwise the same arguments."""
    overload = getattr(target.overloadpacket, "Scalar", None)
    if overload is None or overload is target:
        return None
    mine, theirs = target._schema.arguments, overload._schema.arguments
    if len(mine) != len(theirs) or any(a.name != b.name for a, b in zip(mine, theirs)):
        return None
    for index, (a, b) in enumerate(zip(mine, theirs)):
        scalar = isinstance(b.type, torch.NumberType)
        if (index in positions) != scalar or (index not in positions and str(a.type) != str(b.type)):
            return None
    return overload


def _number_dtype(value):
    return torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float32


def explicit_scalars(graph_module):
    """Rewrites the graph's calls that pass a Python number for a Tensor argument; returns how many."""
    graph = graph_module.graph
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        arguments = node.target._schema.arguments
        positions = {index for index, value in enumerate(node.args)
                     if index < len(arguments) and _is_tensor(arguments[index]) and _is_number(value)}
        named = {name for name, value in node.kwargs.items()
                 if any(a.name == name and _is_tensor(a) for a in arguments) and _is_number(value)}
        if not positions and not named:
            continue
        overload = _scalar_overload(node.target, positions) if not named else None
        if overload is not None:
            node.target = overload
        else:
            args, kwargs = list(node.args), dict(node.kwargs)
            with graph.inserting_before(node):
                for index in positions:
                    args[index] = graph.call_function(torch.ops.aten.scalar_tensor.default, (args[index],),
                                                      {"dtype": _number_dtype(args[index])})
                    args[index].meta["val"] = torch.scalar_tensor(node.args[index],
                                                                  dtype=_number_dtype(node.args[index]))
                for name in named:
                    kwargs[name] = graph.call_function(torch.ops.aten.scalar_tensor.default, (kwargs[name],),
                                                       {"dtype": _number_dtype(kwargs[name])})
                    kwargs[name].meta["val"] = torch.scalar_tensor(node.kwargs[name],
                                                                   dtype=_number_dtype(node.kwargs[name]))
            node.args, node.kwargs = tuple(args), kwargs
        rewritten += 1
    if rewritten:
        graph_module.recompile()
    return rewritten


def _is_complex(value):
    return isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.Tensor) and \
        value.meta["val"].is_complex()


def real_complex_products(graph_module):
    """Rewrites aten.mul of complex tensors, and of a complex tensor by a number (before
    run_decompositions, which computes the new nodes' metadata); returns how many."""
    graph = graph_module.graph
    aten = torch.ops.aten
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mul.Tensor, aten.mul.Scalar) or node.kwargs:
            continue
        left, right = node.args
        if _is_complex(right) and not _is_complex(left):
            left, right = right, left
        if not _is_complex(left):
            continue
        if not _is_complex(right):  # times a real number or tensor: both parts scaled
            if isinstance(right, torch.fx.Node) and isinstance(right.meta.get("val"), torch.Tensor):
                continue  # a real tensor's broadcast against the parts' extra dimension is not rewritten here
            with graph.inserting_before(node):
                scaled = graph.call_function(aten.mul.Tensor,
                                             (graph.call_function(aten.view_as_real.default, (left,)), right))
                product = graph.call_function(aten.view_as_complex.default, (scaled,))
            product.meta = dict(node.meta)
            node.replace_all_uses_with(product)
            graph.erase_node(node)
            rewritten += 1
            continue
        with graph.inserting_before(node):
            def part(value, index):
                return graph.call_function(aten.select.int, (graph.call_function(aten.view_as_real.default, (value,)),
                                                             -1, index))
            a, b, c, d = part(left, 0), part(left, 1), part(right, 0), part(right, 1)
            real = graph.call_function(aten.sub.Tensor, (graph.call_function(aten.mul.Tensor, (a, c)),
                                                         graph.call_function(aten.mul.Tensor, (b, d))))
            imaginary = graph.call_function(aten.add.Tensor, (graph.call_function(aten.mul.Tensor, (a, d)),
                                                              graph.call_function(aten.mul.Tensor, (b, c))))
            product = graph.call_function(aten.view_as_complex.default,
                                          (graph.call_function(aten.stack.default, ([real, imaginary], -1)),))
        product.meta = dict(node.meta)
        node.replace_all_uses_with(product)
        graph.erase_node(node)
        rewritten += 1
    if rewritten:
        graph_module.recompile()
    return rewritten
