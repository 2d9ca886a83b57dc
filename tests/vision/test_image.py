"""Resize / letterbox maps, normalisation and timm encoders."""

import numpy as np
import pytest

from pixelrl.vision.image import denormalize, letterbox, normalize, resize


def _screen(w=200, h=100, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_letterbox_geometry_hand_worked():
    img, m = letterbox(_screen(200, 100), (64, 64), pad_value=7)
    assert img.shape == (64, 64, 3)
    # scale 64/200 = 0.32 -> content 64×32 at top = (64-32)//2 = 16
    assert (m.scale_x, m.scale_y, m.pad_left, m.pad_top) == (0.32, 0.32, 0, 16)
    assert (img[:16] == 7).all() and (img[48:] == 7).all()
    assert not (img[16:48] == 7).all()
    np.testing.assert_allclose(
        m.to_image([[0, 0], [200, 100], [100, 50]]), [[0, 16], [64, 48], [32, 32]]
    )


def test_map_round_trips_points_and_boxes():
    for size in [(64, 64), (97, 33), (300, 700)]:
        _, m = letterbox(_screen(203, 117), size)
        pts = np.random.default_rng(1).uniform(0, 117, (50, 2))
        np.testing.assert_allclose(m.to_screen(m.to_image(pts)), pts, atol=1e-9)
        boxes = np.array([[3, 4, 50, 60], [0, 0, 203, 117]])
        np.testing.assert_allclose(m.box_to_screen(m.box_to_image(boxes)), boxes, atol=1e-9)


def test_screen_pixel_inverts_image_pixel_when_upscaling():
    # Enlarging 2x: every screen pixel maps to an image pixel that maps back to it exactly.
    _, m = letterbox(_screen(50, 40), (100, 100))
    xs, ys = np.meshgrid(np.arange(50), np.arange(40))
    screen_pixels = np.stack([xs.ravel(), ys.ravel()], 1)
    back = m.screen_pixel(m.image_pixel(screen_pixels) + 0.5)
    np.testing.assert_array_equal(back, screen_pixels)


def test_screen_pixel_clamps_padding_and_edges():
    _, m = letterbox(_screen(200, 100), (64, 64))
    # A point in the top padding maps to row 0; the far corner of the content to the last pixel.
    assert m.screen_pixel([10.0, 2.0]).tolist() == [31, 0]
    assert m.screen_pixel([63.99, 47.99]).tolist() == [199, 99]


def test_resize_stretches_without_padding():
    img, m = resize(_screen(200, 100), (50, 50))
    assert img.shape == (50, 50, 3) and (m.pad_left, m.pad_top) == (0, 0)
    assert (m.scale_x, m.scale_y) == (0.25, 0.5)
    np.testing.assert_allclose(m.to_screen([[25, 25]]), [[100, 50]])


def test_resize_rejects_bad_sizes():
    with pytest.raises(ValueError, match="target size"):
        letterbox(_screen(), (0, 10))
    with pytest.raises(ValueError, match="image must be"):
        resize(np.zeros((0, 5, 3), np.uint8), (4, 4))


def test_normalize_round_trip_and_layout():
    img = _screen(8, 6)
    x = normalize(img)
    assert x.shape == (3, 6, 8) and x.dtype == np.float32
    np.testing.assert_allclose(x[0, 0, 0], (img[0, 0, 0] / 255 - 0.485) / 0.229, rtol=1e-6)
    np.testing.assert_array_equal(denormalize(x), img)
    assert normalize(np.stack([img, img])).shape == (2, 3, 6, 8)


def test_timm_encoder_feature_maps_and_weights_from_disk(tmp_path):
    torch = pytest.importorskip("torch")
    import timm

    from pixelrl.vision.encoders import build_encoder, feature_channels

    enc = build_encoder("resnet18", out_indices=(1, 2, 3, 4))
    feats = enc(torch.zeros(1, 3, 64, 96))
    assert [f.shape[1] for f in feats] == feature_channels(enc) == [64, 128, 256, 512]
    assert feats[-1].shape[-2:] == (2, 3)  # stride 32

    # A classifier checkpoint on disk loads into the feature extractor (its head is ignored).
    torch.manual_seed(1)
    classifier = timm.create_model("resnet18", pretrained=False)
    path = tmp_path / "resnet18.pth"
    torch.save(classifier.state_dict(), path)
    loaded = build_encoder("resnet18", weights=path)
    assert torch.equal(loaded.state_dict()["conv1.weight"], classifier.state_dict()["conv1.weight"])
    with pytest.raises(FileNotFoundError, match="not found"):
        build_encoder("resnet18", weights=tmp_path / "missing.pth")
