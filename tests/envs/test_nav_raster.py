"""The numba rasterizer draws what Embree ray casting sees: depth, semantics, RGB, clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba", reason="the raster renderer needs numba (pip install numba)")

from test_nav_mesh import X0, X1, Z0, _analytic_depth, _room_glb  # noqa: E402  (the .glb room)

from pixelrl.envs.nav.apartment import generate_apartment  # noqa: E402
from pixelrl.envs.nav.env import NavEnv  # noqa: E402
from pixelrl.envs.nav.mesh_io import load_scene  # noqa: E402
from pixelrl.envs.nav.navgrid import NavGrid  # noqa: E402
from pixelrl.envs.nav.raster import NEAR, RasterRenderer  # noqa: E402
from pixelrl.envs.nav.renderer import CameraSpec, EmbreeRenderer  # noqa: E402

ALL = ("rgb", "depth", "semantic")


@pytest.fixture(scope="module")
def apartments():
    return [generate_apartment(seed, None) for seed in range(3)]


def _agent_poses(scenes, per_scene: int, seed: int = 0):
    """Navigable standing points (as the env uses) with random headings."""
    rng = np.random.default_rng(seed)
    idx, pos, yaw = [], [], []
    for k, scene in enumerate(scenes):
        grid = NavGrid(scene)
        for _ in range(per_scene):
            idx.append(k)
            pos.append(grid.sample_navigable(rng))
            yaw.append(rng.uniform(-math.pi, math.pi))
    return np.array(idx), np.array(pos), np.array(yaw)


def _assert_same_picture(ours: dict, theirs: dict) -> None:
    """Depth within 1 cm on >= 99% of pixels, semantic ids equal on >= 98%, RGB close."""
    if "depth" in theirs:
        close = np.abs(ours["depth"] - theirs["depth"]) < 0.01
        assert close.mean() >= 0.99, f"depth within 1 cm on only {close.mean():.4f} of pixels"
    if "semantic" in theirs:
        same = ours["semantic"] == theirs["semantic"]
        assert same.mean() >= 0.98, f"semantic ids equal on only {same.mean():.4f} of pixels"
    if "rgb" in theirs:
        diff = np.abs(ours["rgb"].astype(int) - theirs["rgb"].astype(int))
        assert diff.mean() < 1.0, f"mean abs RGB difference {diff.mean():.2f}"
        assert (diff.max(-1) == 0).mean() >= 0.98


@pytest.mark.parametrize(("width", "height", "hfov"), [(64, 64, 90.0), (80, 48, 70.0)])
def test_raster_matches_embree_in_apartments(apartments, width, height, hfov):
    cam = CameraSpec(width=width, height=height, hfov=hfov)
    idx, pos, yaw = _agent_poses(apartments, per_scene=6)
    ours = RasterRenderer(apartments, cam).render(idx, pos, yaw, sensors=ALL)
    theirs = EmbreeRenderer(apartments, cam).render(idx, pos, yaw, sensors=ALL)
    for key in ALL:
        assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape
    _assert_same_picture(ours, theirs)
    # Textured floors and walls, furniture of several instances: the pictures are not trivial.
    assert len(np.unique(ours["semantic"])) > 5 and ours["rgb"].std() > 10


def test_raster_depth_matches_analytic_glb_room(tmp_path):
    path = tmp_path / "room.glb"
    _room_glb(path)
    scene = load_scene(path)
    cam = CameraSpec(width=48, height=36, hfov=90, sensor_height=1.25, max_depth=20)
    ours = RasterRenderer([scene], cam)
    theirs = EmbreeRenderer([scene], cam)
    chair_id = next(i.instance_id for i in scene.instances.values() if i.category == "chair")
    for pos, yaw in [((0.0, 0.0, 0.0), 0.0), ((0.5, 0.0, -1.0), 1.1), ((-1.0, 0.0, 0.5), -2.5)]:
        out = ours.render([0], [pos], [yaw], sensors=ALL)
        depth = out["depth"][0, :, :, 0]
        expected = _analytic_depth(cam, np.array(pos) + [0, 1.25, 0], yaw)
        walls = out["semantic"][0, :, :, 0] != chair_id
        assert walls.mean() > 0.8
        np.testing.assert_allclose(depth[walls], expected[walls], atol=0.01)
    # Against Embree at general poses (at the poses above a whole pixel row meets the
    # ceiling-wall edge exactly, a tie that the two renderers may break either way).
    rng = np.random.default_rng(4)
    n = 6
    pos = np.stack(
        [rng.uniform(X0 + 0.2, X1 - 0.2, n), np.zeros(n), rng.uniform(Z0 + 0.2, -1, n)], 1
    )
    yaw = rng.uniform(-math.pi, math.pi, n)
    _assert_same_picture(
        ours.render(np.zeros(n, int), pos, yaw, sensors=ALL),
        theirs.render(np.zeros(n, int), pos, yaw, sensors=ALL),
    )


def test_raster_samples_textures_like_embree(tmp_path):
    """Texture lookups at the hit's barycentrics, perspective-correct, on an oblique floor."""
    scene = generate_apartment(5, None)
    cam = CameraSpec(width=96, height=96, hfov=100)
    idx, pos, yaw = _agent_poses([scene], per_scene=4, seed=3)
    ours = RasterRenderer([scene], cam).render(idx, pos, yaw, sensors=("rgb",))
    theirs = EmbreeRenderer([scene], cam).render(idx, pos, yaw, sensors=("rgb",))
    assert set(ours) == {"rgb"}
    _assert_same_picture(ours, theirs)


@pytest.mark.parametrize("normalize", [False, True])
def test_depth_clipping_and_normalisation_like_embree(apartments, normalize):
    cam = CameraSpec(width=40, height=40, min_depth=0.5, max_depth=3.0, normalize_depth=normalize)
    idx, pos, yaw = _agent_poses(apartments, per_scene=2, seed=1)
    ours = RasterRenderer(apartments, cam).render(idx, pos, yaw, sensors=("depth",))
    theirs = EmbreeRenderer(apartments, cam).render(idx, pos, yaw, sensors=("depth",))
    lo, hi = (0.0, 1.0) if normalize else (0.5, 3.0)
    assert ours["depth"].min() >= lo and ours["depth"].max() <= hi
    _assert_same_picture(ours, theirs)


def test_camera_straddling_a_wall_is_clipped_not_garbage(apartments):
    """Eyes inside a wall's thickness and grazing it: faces crossing the camera plane are cut
    at the near plane, never projected from behind the camera."""
    scene = apartments[0]
    wall_id = next(i.instance_id for i in scene.instances.values() if i.category == "wall")
    walls = scene.triangles[scene.face_instance == wall_id]
    normals = np.cross(walls[:, 1] - walls[:, 0], walls[:, 2] - walls[:, 0])
    # An outer wall face normal to x: its plane x = x0, spanning z. Stand in it and next to it.
    vertical_x = np.abs(normals[:, 0]) > 0.99 * np.linalg.norm(normals, axis=1)
    face = walls[vertical_x][np.argmax(np.ptp(walls[vertical_x][:, :, 2], axis=1))]
    x0, z_mid = float(face[0, 0]), float(face[:, 2].mean())
    cam = CameraSpec(width=64, height=64, max_depth=10)
    poses = [
        ((x0, 0.0, z_mid), 0.0),  # eye in the wall plane, looking along it
        ((x0, 0.0, z_mid), math.pi / 2),  # ... and across it
        ((x0 + 0.003, 0.0, z_mid), 1.2),  # 3 mm beside it (nearer than NEAR), oblique
        ((x0 - 0.02, 0.0, z_mid), -0.4),
    ]
    idx = np.zeros(len(poses), int)
    pos = np.array([p for p, _ in poses])
    yaw = np.array([y for _, y in poses])
    ours = RasterRenderer([scene], cam).render(idx, pos, yaw, sensors=ALL)
    theirs = EmbreeRenderer([scene], cam).render(idx, pos, yaw, sensors=ALL)
    assert np.isfinite(ours["depth"]).all()
    assert ours["depth"].min() >= 0 and ours["depth"].max() <= cam.max_depth
    # Embree sees surfaces nearer than the near plane; elsewhere the pictures agree.
    far_enough = theirs["depth"] >= NEAR
    close = np.abs(ours["depth"] - theirs["depth"]) < 0.01
    assert close[far_enough].mean() >= 0.99
    assert (ours["semantic"] == theirs["semantic"])[far_enough].mean() >= 0.98


def test_raster_is_deterministic_and_batch_independent(apartments):
    cam = CameraSpec(width=48, height=48)
    idx, pos, yaw = _agent_poses(apartments, per_scene=3, seed=2)
    batched = RasterRenderer(apartments, cam, threads=2).render(idx, pos, yaw, sensors=ALL)
    single = RasterRenderer(apartments, cam, threads=1)
    again = single.render(idx, pos, yaw, sensors=ALL)
    for key in ALL:
        np.testing.assert_array_equal(batched[key], again[key])
    one = single.render(idx[4:5], pos[4:5], yaw[4:5], sensors=ALL)
    for key in ALL:
        np.testing.assert_array_equal(one[key][0], batched[key][4])


def test_render_rejects_mismatched_inputs(apartments):
    renderer = RasterRenderer(apartments, CameraSpec(width=8, height=8))
    with pytest.raises(ValueError, match="scene_index out of range"):
        renderer.render([3], [(1.0, 0.0, 1.0)], [0.0])
    with pytest.raises(ValueError, match="one scene index and yaw per position"):
        renderer.render([0, 1], [(1.0, 0.0, 1.0)], [0.0])


def test_env_renderer_option():
    kwargs = dict(width=32, height=32, sensors=ALL, num_scenes=2)
    obs = {}
    for name in ("raster", "embree"):
        env = NavEnv(renderer=name, **kwargs)
        assert type(env.sim.renderer) is (RasterRenderer if name == "raster" else EmbreeRenderer)
        obs[name], _ = env.reset(seed=0)
        env.close()
    _assert_same_picture(obs["raster"], obs["embree"])
    np.testing.assert_array_equal(
        obs["raster"]["pointgoal_with_gps_compass"], obs["embree"]["pointgoal_with_gps_compass"]
    )
    with pytest.raises(ValueError, match="renderer must be one of"):
        NavEnv(renderer="opengl", **kwargs)
