"""PP-OCR's ONNX graphs rewritten to run faster on a CPU, with the same outputs.

PP-OCRv4's detector and recogniser (PP-LCNetV3 backbones) come exported with every "learnable
affine block" (``y = a·x + b``, ``a`` and ``b`` scalars) spelled out after a conv and after its
activation, and with hard-swish spelled out as ``x·clip(x + 3, 0, 6) / 6``: up to eight
elementwise passes over the feature map per conv, which ONNX Runtime does not fuse. On one core
they were half of the recogniser's time (profile: Mul 20%, Add 16%, Clip 6%, Div 6% against
Conv 35%). :func:`fold_model` rewrites three patterns, each exactly (up to float rounding):

1. ``conv → ·a → +b`` becomes the conv alone, with weights ``W·a`` and bias ``bias·a + b``;
2. ``x + 3 → clip(0, 6) → x·_ → /6`` becomes ``x · HardSigmoid(x; α = 1/6, β = 1/2)`` (opset-6
   ops: the models are opset 12, and moving them to HardSwish's opset 14 would break their
   Squeeze nodes);
3. ``·c → +d → conv`` puts the scale into the conv's weights (``W·c``) and, when the conv has no
   padding, the shift into its bias (``bias + d·ΣW``); with padding the shift stays, as ``+d/c``
   before the conv, since the zero padding must see the shifted input's zeros.

Measured on one core (the other busy): the recogniser at
48x512 35.5 -> 19.4 ms, the detector at 416x320 26.4 -> 18.6 ms, outputs within 2e-6; a whole
MiniWoB++ screen 160 -> 100 ms, the same words (``bench/reader.py`` against ``--no-fold``).
Anything else in a graph is left as it is, so a graph with none of these patterns comes back
unchanged.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np


def fold_model(model: str | Path | bytes) -> bytes:
    """The ONNX model at ``model`` (a path, or its serialised bytes) with the three patterns of
    the module doc folded; serialised, ready for ``onnxruntime.InferenceSession``."""
    import onnx

    proto = onnx.load_from_string(model) if isinstance(model, bytes) else onnx.load(str(model))
    _Folder(proto.graph).run()
    return proto.SerializeToString()


class _Folder:
    """One pass per pattern over a graph; nodes are dropped by marking, then swept once."""

    def __init__(self, graph) -> None:
        from onnx import numpy_helper

        self.graph = graph
        self.nodes = list(graph.node)  # held, so that id() names each node for the whole pass
        self.const: dict[str, np.ndarray] = {
            i.name: numpy_helper.to_array(i) for i in graph.initializer
        }
        for n in self.nodes:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.const[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.dropped: set[int] = set()
        self.names = (f"pixelrl_fold_{k}" for k in itertools.count())

    # -- the graph as it stands ---------------------------------------------------------------
    def live(self):
        return [n for n in self.nodes if id(n) not in self.dropped]

    def consumers(self) -> dict[str, list]:
        out: dict[str, list] = {}
        for n in self.live():
            for i in n.input:
                out.setdefault(i, []).append(n)
        for o in self.graph.output:  # a graph output is consumed by the world: never fold it away
            out.setdefault(o.name, []).append(None)
        return out

    def scalar(self, node) -> tuple[float | None, str | None]:
        """A binary node's scalar constant operand and its other input, or (None, None)."""
        if node is None or len(node.input) != 2:
            return None, None
        a, b = node.input
        for k, other in ((a, b), (b, a)):
            value = self.const.get(k)
            if value is not None and value.size == 1 and other not in self.const:
                return float(value.ravel()[0]), other
        return None, None

    def add_const(self, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = next(self.names)
        self.const[name] = value.astype(np.float32)
        self.graph.initializer.append(numpy_helper.from_array(self.const[name], name))
        return name

    def conv_weights(self, conv) -> tuple[np.ndarray, np.ndarray] | None:
        w = self.const.get(conv.input[1])
        if w is None or w.ndim != 4 or w.dtype != np.float32:  # 2-D float32 convs only
            return None
        b = self.const.get(conv.input[2]) if len(conv.input) > 2 else np.zeros(w.shape[0], w.dtype)
        return (w, b) if b is not None else None

    # -- the three patterns -------------------------------------------------------------------
    def run(self) -> None:
        self.fold_affine_into_conv()
        self.fuse_hard_swish()
        self.fold_affine_into_next_conv()
        self.sweep()

    def fold_affine_into_conv(self) -> None:
        users = self.consumers()

        def only(name):
            c = users.get(name, [])
            return c[0] if len(c) == 1 else None

        for conv in self.live():
            if conv.op_type != "Conv" or (wb := self.conv_weights(conv)) is None:
                continue
            mul = only(conv.output[0])
            if mul is None or mul.op_type != "Mul" or (a := self.scalar(mul)[0]) is None:
                continue
            add = only(mul.output[0])
            if add is None or add.op_type != "Add" or (b := self.scalar(add)[0]) is None:
                continue
            w, bias = wb
            conv.input[:] = [conv.input[0], self.add_const(w * a), self.add_const(bias * a + b)]
            conv.output[0] = add.output[0]
            self.dropped.update((id(mul), id(add)))

    def fuse_hard_swish(self) -> None:
        from onnx import helper

        users = self.consumers()
        for add in self.live():
            three, x = self.scalar(add) if add.op_type == "Add" else (None, None)
            if three != 3.0:
                continue
            after = users.get(add.output[0], [])
            if len(after) != 1 or after[0] is None or after[0].op_type != "Clip":
                continue
            clip = after[0]
            if len(clip.input) != 3:
                continue
            bounds = [self.const.get(i) for i in clip.input[1:]]
            if any(v is None or v.size != 1 for v in bounds):
                continue
            if [float(v.ravel()[0]) for v in bounds] != [0.0, 6.0]:
                continue
            after = users.get(clip.output[0], [])
            if len(after) != 1 or after[0].op_type != "Mul" or x not in after[0].input:
                continue
            mul = after[0]
            after = users.get(mul.output[0], [])
            if len(after) != 1 or after[0].op_type != "Div" or self.scalar(after[0])[0] != 6.0:
                continue
            div = after[0]
            if div.input[0] != mul.output[0]:  # 6 / (x·c) is not hard-swish
                continue
            gate = next(self.names)
            add.CopyFrom(helper.make_node("HardSigmoid", [x], [gate], alpha=1.0 / 6, beta=0.5))
            clip.CopyFrom(helper.make_node("Mul", [x, gate], [div.output[0]]))
            self.dropped.update((id(mul), id(div)))

    def fold_affine_into_next_conv(self) -> None:
        users = self.consumers()
        for mul in self.live():
            if mul.op_type != "Mul":
                continue
            c, x = self.scalar(mul)
            if not c:  # None, or 0 (nothing to divide the shift by)
                continue
            after = users.get(mul.output[0], [])
            if len(after) != 1 or after[0] is None or after[0].op_type != "Add":
                continue
            add = after[0]
            d = self.scalar(add)[0]
            after = users.get(add.output[0], [])
            if d is None or len(after) != 1 or after[0] is None or after[0].op_type != "Conv":
                continue
            conv = after[0]
            if conv.input[0] != add.output[0] or (wb := self.conv_weights(conv)) is None:
                continue
            w, bias = wb
            pads = [list(a.ints) for a in conv.attribute if a.name == "pads"]
            auto = [a.s for a in conv.attribute if a.name == "auto_pad"]
            unpadded = not any(pads[0] if pads else []) and auto in ([], [b"NOTSET"], [b"VALID"])
            if unpadded:
                shifted = bias + d * w.sum(axis=(1, 2, 3))
                conv.input[:] = [x, self.add_const(w * c), self.add_const(shifted)]
                self.dropped.update((id(mul), id(add)))
            else:
                add.input[:] = [x, self.add_const(np.array([d / c]))]
                conv.input[:] = [add.output[0], self.add_const(w * c), self.add_const(bias)]
                self.dropped.add(id(mul))

    def sweep(self) -> None:
        """Drop the marked nodes, then every constant that nothing reads any more."""
        keep = self.live()
        used = {i for n in keep for i in n.input} | {o.name for o in self.graph.output}
        keep = [_copy(n) for n in keep if n.op_type != "Constant" or n.output[0] in used]
        del self.graph.node[:]
        self.graph.node.extend(keep)
        inits = [_copy(i) for i in self.graph.initializer if i.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(inits)


def _copy(message):
    twin = type(message)()
    twin.CopyFrom(message)
    return twin
