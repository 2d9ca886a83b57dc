"""The reader's load (issue 57 item 5): each ONNX session is built once (the detector's and the
recogniser's, folded; no angle classifier), a second reader of the process does not fold again,
and the folded reader reads the same words off a real screenshot as the wheel's graphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pixelrl.vision import reader as reader_module
from pixelrl.vision.reader import ScreenReader

pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
from test_reader import _bench  # noqa: E402  (tests/vision: bench/reader.py, loaded once)


def _desktop_screen():
    image, _ = _bench().desktop_screen("pixelrl/Desktop-ClickButton-v0", (320, 240), 1)
    return image


def _count_sessions(monkeypatch) -> list[str]:
    """Records every ONNX Runtime session rapidocr builds (the real class still builds it)."""
    from rapidocr_onnxruntime.utils import infer_engine

    built: list[str] = []
    real = infer_engine.InferenceSession

    def counted(model, *args, **kwargs):
        built.append(Path(model).name if isinstance(model, str) else "bytes")
        return real(model, *args, **kwargs)

    monkeypatch.setattr(infer_engine, "InferenceSession", counted)
    return built


@pytest.mark.parametrize("fold", [True, False])
def test_each_session_is_built_once(monkeypatch, fold):
    built = _count_sessions(monkeypatch)
    reader = ScreenReader(fold=fold).warm_up()
    assert len(built) == 2, built  # detector and recogniser; never the angle classifier
    if fold:
        assert built == ["det.onnx", "rec.onnx"]  # the folded graphs, not the wheel's first
    engine = reader._engine
    for session in (engine.text_det.infer.session, engine.text_rec.session.session):
        options = session.get_session_options()
        assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1


def test_a_second_reader_does_not_fold_again():
    ScreenReader().warm_up()
    folds = reader_module._folded.cache_info().misses
    ScreenReader().warm_up()
    assert reader_module._folded.cache_info().misses == folds


def test_the_reader_threads_reach_its_sessions():
    engine = ScreenReader(threads=2, cache_size=0).warm_up()._engine
    assert engine.text_rec.session.session.get_session_options().intra_op_num_threads == 2


def test_folded_and_shipped_graphs_read_the_same_words():
    image = _desktop_screen()
    folded = ScreenReader(cache_size=0).read(image)
    shipped = ScreenReader(fold=False, cache_size=0).read(image)
    assert [w.text for w in folded] == [w.text for w in shipped]
    assert [w.text for w in folded][:3] == ["Inspector", "X", "Choose"]  # bench/reader.py --load
    assert [w.box for w in folded] == [w.box for w in shipped]
