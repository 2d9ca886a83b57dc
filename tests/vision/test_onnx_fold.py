"""The ONNX rewrite behind the reader's speed (pixelrl.vision.onnx_fold): on a small graph built
here with each pattern (and a conv with padding, where the shift must stay), and on the
wheel's own PP-OCR models, the folded graph has fewer nodes and gives the same outputs."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="needs the reader extra (onnx)")
ort = pytest.importorskip("onnxruntime", reason="needs the reader extra (onnxruntime)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pixelrl.vision.onnx_fold import fold_model  # noqa: E402


def _session(model: bytes):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _lcnet_graph(out_is_affine: bool = False) -> bytes:
    """conv1x1 -> affine -> hard-swish -> affine -> conv3x3 (pad 1) -> affine -> hard-swish ->
    affine -> conv1x1, PP-LCNetV3's block as PP-OCR exports it (scalars as Constant nodes)."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    k = iter(range(1000))

    def const(value) -> str:
        name = f"c{next(k)}"
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.asarray(value, np.float32), name)))  # fmt: skip
        return name

    def op(kind, inputs, **attrs) -> str:
        name = f"t{next(k)}"
        nodes.append(helper.make_node(kind, inputs, [name], **attrs))
        return name

    def affine(x, a, b) -> str:
        return op("Add", [op("Mul", [const([a]), x]), const([b])])

    def hard_swish(x) -> str:
        gate = op("Clip", [op("Add", [x, const([3.0])]), const(0.0), const(6.0)])
        return op("Div", [op("Mul", [x, gate]), const([6.0])])

    def conv(x, cin, cout, size, pad) -> str:
        w = rng.normal(0, 0.5, (cout, cin, size, size)).astype(np.float32)
        b = rng.normal(0, 0.1, cout).astype(np.float32)
        return op("Conv", [x, const(w), const(b)], pads=[pad] * 4, kernel_shape=[size, size])

    y = affine(hard_swish(affine(conv("x", 3, 8, 1, 0), 1.4, 0.6)), 0.2, -0.3)
    y = affine(hard_swish(affine(conv(y, 8, 8, 3, 1), 2.1, 1.0)), 0.7, 0.25)
    y = conv(y, 8, 4, 1, 0)
    outputs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 4, 12, 20])]
    if out_is_affine:  # an intermediate the world reads: it must survive the folding
        outputs.append(
            helper.make_tensor_value_info(nodes[4].output[0], TensorProto.FLOAT, [1, 8, 12, 20])
        )
    graph = helper.make_graph(nodes, "lcnet", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 3, 12, 20])], outputs, inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.parametrize("out_is_affine", [False, True])
def test_folding_a_pp_lcnet_block_keeps_its_outputs(out_is_affine):
    original = _lcnet_graph(out_is_affine)
    folded = fold_model(original)
    kinds = [n.op_type for n in onnx.load_from_string(folded).graph.node]
    if not out_is_affine:
        assert "Clip" not in kinds and "Div" not in kinds, kinds
        assert kinds.count("HardSigmoid") == 2 and kinds.count("Conv") == 3
        # what is left elementwise: the gates' products and the padded conv's shift
        assert kinds.count("Mul") == 2 and kinds.count("Add") == 1, kinds
    x = np.random.default_rng(1).normal(0, 2, (1, 3, 12, 20)).astype(np.float32)
    before = _session(original).run(None, {"x": x})
    after = _session(folded).run(None, {"x": x})
    assert len(before) == len(after)
    for a, b in zip(before, after):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


def test_a_graph_without_the_patterns_comes_back_the_same():
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    folded = onnx.load_from_string(fold_model(model.SerializeToString()))
    assert [n.op_type for n in folded.graph.node] == ["Relu"]


def test_the_wheels_pp_ocr_models_fold_to_the_same_outputs():
    rapidocr = pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    from pathlib import Path

    models = Path(rapidocr.__file__).parent / "models"
    rng = np.random.default_rng(0)
    for name, shape in (("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 160)),
                        ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 96, 128))):  # fmt: skip
        path = models / name
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        original = _session(path.read_bytes())
        folded_bytes = fold_model(path)
        folded = _session(folded_bytes)
        feed = {original.get_inputs()[0].name: x}
        a, b = original.run(None, feed)[0], folded.run(None, feed)[0]
        np.testing.assert_allclose(b, a, atol=1e-4)
        n_before = len(onnx.load(str(path)).graph.node)
        n_after = len(onnx.load_from_string(folded_bytes).graph.node)
        assert n_after < 0.7 * n_before, (name, n_before, n_after)
