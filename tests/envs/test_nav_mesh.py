"""External scenes: a .glb built here loads, renders analytic depth, keeps semantics/textures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from PIL import Image

from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.mesh_io import SceneFileError, export_glb, load_scene
from pixelrl.envs.nav.renderer import CameraSpec, EmbreeRenderer
from pixelrl.envs.nav.topdown import save_topdown_png

# A closed room x in [-2, 3], z in [-4, 1.5], floor y = 0, ceiling y = 2.5.
X0, X1, Z0, Z1, CEIL = -2.0, 3.0, -4.0, 1.5, 2.5


def _room_glb(path):
    scene = trimesh.Scene()
    walls = {
        "wall_0": trimesh.creation.box(extents=[X1 - X0, 0.1, Z1 - Z0]),  # floor slab (top at y=0)
    }
    walls["wall_0"].apply_translation([(X0 + X1) / 2, -0.05, (Z0 + Z1) / 2])
    ceiling = trimesh.creation.box(extents=[X1 - X0, 0.1, Z1 - Z0])
    ceiling.apply_translation([(X0 + X1) / 2, CEIL + 0.05, (Z0 + Z1) / 2])
    walls["ceiling_1"] = ceiling
    for k, (cx, cz, ex, ez) in enumerate(
        [
            (X0 - 0.05, (Z0 + Z1) / 2, 0.1, Z1 - Z0),
            (X1 + 0.05, (Z0 + Z1) / 2, 0.1, Z1 - Z0),
            ((X0 + X1) / 2, Z0 - 0.05, X1 - X0, 0.1),
            ((X0 + X1) / 2, Z1 + 0.05, X1 - X0, 0.1),
        ]
    ):
        box = trimesh.creation.box(extents=[ex, CEIL, ez])
        box.apply_translation([cx, CEIL / 2, cz])
        walls[f"wall_{k + 2}"] = box
    chair = trimesh.creation.box(extents=[0.5, 0.9, 0.5])
    chair.apply_translation([2.0, 0.45, -3.0])
    walls["chair_7"] = chair
    for name, mesh in walls.items():
        scene.add_geometry(mesh, node_name=name, geom_name=name)
    scene.export(str(path), file_type="glb")


def _analytic_depth(cam: CameraSpec, eye: np.ndarray, yaw: float) -> np.ndarray:
    """z-depth to the nearest of the room's six planes, independent of Embree."""
    d = cam.ray_directions().astype(np.float64)
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy, dz = c * d[:, 0] + s * d[:, 2], d[:, 1], -s * d[:, 0] + c * d[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        ts = [
            np.where(dx > 0, (X1 - eye[0]) / dx, (X0 - eye[0]) / dx),
            np.where(dy > 0, (CEIL - eye[1]) / dy, (0.0 - eye[1]) / dy),
            np.where(dz > 0, (Z1 - eye[2]) / dz, (Z0 - eye[2]) / dz),
        ]
    t = np.min(np.stack([np.where(v > 0, v, np.inf) for v in ts]), axis=0)
    return t.reshape(cam.height, cam.width)  # directions have unit forward, so t is z-depth


def test_glb_loads_and_depth_matches_analytic_walls(tmp_path):
    path = tmp_path / "room.glb"
    _room_glb(path)
    scene = load_scene(path)
    assert scene.floor_height == pytest.approx(0.0, abs=1e-4)
    cats = sorted(i.category for i in scene.instances.values())
    assert "chair" in cats and "ceiling" in cats and "wall" in cats
    cam = CameraSpec(width=48, height=36, hfov=90, sensor_height=1.25, max_depth=20)
    renderer = EmbreeRenderer([scene], cam)
    chair_id = next(i.instance_id for i in scene.instances.values() if i.category == "chair")
    for pos, yaw in [((0.0, 0.0, 0.0), 0.0), ((0.5, 0.0, -1.0), 1.1), ((-1.0, 0.0, 0.5), -2.5)]:
        out = renderer.render([0], [pos], [yaw], sensors=("depth", "semantic"))
        depth = out["depth"][0, :, :, 0]
        expected = _analytic_depth(cam, np.array(pos) + [0, 1.25, 0], yaw)
        walls = out["semantic"][0, :, :, 0] != chair_id  # the chair is not in the analytic room
        assert walls.mean() > 0.8
        np.testing.assert_allclose(depth[walls], expected[walls], atol=0.01)


def test_glb_scene_drives_the_env_and_semantics(tmp_path):
    path = tmp_path / "room.glb"
    _room_glb(path)
    env = NavEnv(
        task="objectnav",
        width=32,
        height=32,
        sensors=("rgb", "depth", "semantic"),
        scenes=[str(path)],
        episode_rules={"min_geodesic": 0.5, "min_ratio": 1.0},
    )  # one open room: no detours
    obs, info = env.reset(seed=0)
    assert info["scene_id"] == str(path)
    assert env.state.episode.object_category == "chair"
    # Facing the chair from a view point (camera above the 0.9 m chair), its id shows below the
    # horizon and nowhere above it.
    vp = env.state.episode.goal_points()[0]
    chair = env.state.episode.goals[0]
    yaw = math.atan2(-(chair.position[0] - vp[0]), -(chair.position[2] - vp[2]))
    out = env.sim.renderer.render([0], [vp], [yaw], sensors=("semantic",))
    sem = out["semantic"][0, :, :, 0]
    assert (sem[16:] == chair.object_id).sum() > 4 and not (sem[:14] == chair.object_id).any()
    png = tmp_path / "map.png"
    save_topdown_png(
        png, env.state.grid, goals=chair.position[None], agent=(env.state.position, env.state.yaw)
    )
    img = np.asarray(Image.open(png))
    assert img.ndim == 3 and (img == [220, 30, 30]).all(-1).any()  # the goal is drawn


def test_textured_glb_is_sampled_at_the_hit_uv(tmp_path):
    # One quad facing +z at z = -2, textured left half red, right half blue.
    tex = np.zeros((64, 64, 3), np.uint8)
    tex[:, :32] = (255, 0, 0)
    tex[:, 32:] = (0, 0, 255)
    verts = np.array([[-2, 0, -2], [2, 0, -2], [2, 3, -2], [-2, 3, -2]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    uv = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float)
    material = trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(tex))
    mesh = trimesh.Trimesh(
        verts, faces, visual=trimesh.visual.TextureVisuals(uv=uv, material=material), process=False
    )
    floor = trimesh.Trimesh(
        [[-2, 0, -2], [2, 0, -2], [2, 0, 2], [-2, 0, 2]], [[0, 2, 1], [0, 3, 2]], process=False
    )
    path = tmp_path / "textured.glb"
    trimesh.Scene({"poster": mesh, "floor": floor}).export(str(path), file_type="glb")
    scene = load_scene(path)
    assert scene.textures is not None and (scene.face_texture >= 0).sum() == 2
    cam = CameraSpec(width=32, height=32, hfov=60, sensor_height=1.25)
    rgb = EmbreeRenderer([scene], cam).render([0], [(0, 0, 0)], [0.0], sensors=("rgb",))["rgb"][0]
    left, right = rgb[10, 8].astype(int), rgb[10, 24].astype(int)
    assert left[0] > 100 and left[2] < 30  # red on the left (u < 0.5)
    assert right[2] > 100 and right[0] < 30  # blue on the right


def test_export_glb_round_trip_keeps_semantics(tmp_path):
    from pixelrl.envs.nav.apartment import generate_apartment

    scene = generate_apartment(3, None)
    export_glb(scene, tmp_path / "apt.glb")
    back = load_scene(tmp_path / "apt.glb")
    assert back.num_faces == scene.num_faces
    assert sorted(i.category for i in back.instances.values()) == sorted(
        i.category for i in scene.instances.values()
    )
    np.testing.assert_allclose(
        np.sort(back.triangles.reshape(-1)), np.sort(scene.triangles.reshape(-1)), atol=1e-5
    )


def test_bad_scene_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.glb"):
        load_scene(tmp_path / "nowhere.glb")
    bad = tmp_path / "broken.glb"
    bad.write_bytes(b"this is not a glb")
    with pytest.raises(SceneFileError, match="broken.glb"):
        load_scene(bad)
    txt = tmp_path / "scene.txt"
    txt.write_text("x")
    with pytest.raises(SceneFileError, match="unsupported scene format"):
        load_scene(txt)
