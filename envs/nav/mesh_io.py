"""External scenes through trimesh: .glb / .gltf / .obj / .ply in, .glb out.

Scenes are read y up, like habitat (glTF is y up by definition; OBJ/PLY files are taken as
authored for habitat), unless habitat's configs beside the file say otherwise: a
``<name>.stage_config.json`` next to ``<name>.glb`` or the ``stages.default_attributes`` of a
``*.scene_dataset_config.json`` in its folder or one above, whose ``up`` / ``front`` vectors
and ``scale`` are applied as habitat applies them (the asset's up becomes +y, its front -z).
The ``up_axis`` option (``"y"``, ``"z"``, or a vector) overrides them. A scene clearly
thinner along x or z than along y after that (a z-up building read y up lies on its side) loads
with a warning that says so. Per face we keep: the base colour (vertex/face colours or the material's
base colour), the texture and UVs of textured materials (sampled at the hit's UV when
rendering), and a semantic instance when the node or mesh name starts with a known category
(``chair``, ``chair_3``, ``tv_monitor.001`` ...), the convention :func:`export_glb` writes.
"""

from __future__ import annotations

import os
import re

import numpy as np

from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES, STRUCTURE_CATEGORIES, ObjectInstance, Scene

SCENE_SUFFIXES = (".glb", ".gltf", ".obj", ".ply")
_CATEGORIES = sorted(OBJECTNAV_CATEGORIES + STRUCTURE_CATEGORIES, key=len, reverse=True)


class SceneFileError(ValueError):
    """A scene file that cannot be used; the message names the file."""


UP_AXES = {"y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0), "x": (1.0, 0.0, 0.0)}


def habitat_frame(path: str) -> dict:
    """``up``, ``front`` and ``scale`` for a scene file from habitat's configs beside it (see
    the module docstring); empty when there are none."""
    import json

    stem = path
    for suffix in SCENE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    candidates = [(stem + ".stage_config.json", None)]
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.endswith(".scene_dataset_config.json"):
                candidates.append((os.path.join(folder, name), ("stages", "default_attributes")))
        folder = os.path.dirname(folder)
    for config, keys in candidates:
        if not os.path.isfile(config):
            continue
        try:
            with open(config, encoding="utf-8") as f:
                data = json.load(f)
            for key in keys or ():
                data = data.get(key) or {}
        except (OSError, ValueError, AttributeError) as e:
            raise SceneFileError(f"{config}: not a habitat config JSON ({e})") from e
        frame = {k: data[k] for k in ("up", "front", "scale") if k in data}
        if frame:
            frame["config"] = config
            return frame
    return {}


def _frame_rotation(up, front) -> np.ndarray:
    """The rotation taking an asset's ``up`` to +y and its ``front`` to -z (habitat's frame)."""
    u = np.asarray(up, dtype=np.float64)
    u = u / np.linalg.norm(u)
    f = np.asarray(front if front is not None else (0.0, 0.0, -1.0), dtype=np.float64)
    if abs(float(np.dot(f / np.linalg.norm(f), u))) > 0.99:  # habitat's default front is -z
        f = np.cross(u, (1.0, 0.0, 0.0)) if abs(u[0]) < 0.9 else np.cross(u, (0.0, 1.0, 0.0))
    f = f - np.dot(f, u) * u
    f = f / np.linalg.norm(f)
    asset = np.stack([np.cross(f, u), u, f], 1)
    world = np.stack([[1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0]], 1)
    return world @ asset.T


def _vector(path: str, name: str, value, n: int = 3) -> np.ndarray:
    if isinstance(value, str):
        if value.lower() not in UP_AXES:
            raise SceneFileError(f"{path}: {name} must be one of {sorted(UP_AXES)} or [x, y, z], got {value!r}")  # fmt: skip
        value = UP_AXES[value.lower()]
    try:
        v = np.asarray(value, dtype=np.float64).reshape(n)
    except (TypeError, ValueError):
        v = np.zeros(n)
    if not np.isfinite(v).all() or np.linalg.norm(v) < 1e-9:
        raise SceneFileError(f"{path}: {name} must be {n} numbers, not all zero, got {value!r}")
    return v


def sideways_axis(triangles: np.ndarray) -> str | None:
    """The axis (``"x"`` or ``"z"``) that looks up, when it is not y: a building is lower than
    it is wide, so its up axis is its thinnest; None when that is y (or no axis is clearly
    thinner than y: under 0.6 of y's extent)."""
    pts = np.asarray(triangles, dtype=np.float64).reshape(-1, 3)
    extent = pts.max(0) - pts.min(0)
    thin = int(extent.argmin())
    return None if thin == 1 or extent[thin] >= 0.6 * extent[1] else "xyz"[thin]


def load_scene(
    path: str | os.PathLike, texture_size: int = 256, up_axis: str | list | None = None
) -> Scene:
    """Load a mesh file as a :class:`Scene` (errors name the file), turned into habitat's
    frame (y up) by ``up_axis`` or habitat's configs beside it (module docstring)."""
    import trimesh

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"scene file not found: {path!r}")
    if not path.lower().endswith(SCENE_SUFFIXES):
        raise SceneFileError(
            f"{path}: unsupported scene format (expected one of {', '.join(SCENE_SUFFIXES)})"
        )
    try:
        loaded = trimesh.load(path, force="scene", process=False)
    except Exception as e:  # trimesh raises many kinds; report them uniformly
        raise SceneFileError(f"{path}: cannot be read as a mesh ({type(e).__name__}: {e})") from e
    tris, colors, inst, uvs, texs = [], [], [], [], []
    textures: list[np.ndarray] = []
    instances: dict[int, ObjectInstance] = {}
    by_name: dict[str, int] = {}
    for node in loaded.graph.nodes_geometry:
        transform, geom_name = loaded.graph[node]
        mesh = loaded.geometry[geom_name]
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            continue
        verts = trimesh.transformations.transform_points(mesh.vertices, transform)
        faces = np.asarray(mesh.faces)
        n = len(faces)
        tris.append(verts[faces])
        color, face_uv, tex_index = _appearance(mesh, faces, textures, texture_size)
        colors.append(color)
        uvs.append(face_uv)
        texs.append(np.full(n, tex_index, np.int32))
        category, key = _category_of(str(node)) or _category_of(str(geom_name)) or (None, None)
        iid = 0
        if category is not None:
            if key not in by_name:
                by_name[key] = len(by_name) + 1
                instances[by_name[key]] = ObjectInstance(
                    by_name[key], category, np.full(3, np.inf), np.full(3, -np.inf)
                )
            iid = by_name[key]
            inst_obj = instances[iid]
            inst_obj.aabb_min = np.minimum(inst_obj.aabb_min, verts[faces].reshape(-1, 3).min(0))
            inst_obj.aabb_max = np.maximum(inst_obj.aabb_max, verts[faces].reshape(-1, 3).max(0))
        inst.append(np.full(n, iid, np.int32))
    if not tris:
        raise SceneFileError(f"{path}: contains no triangles")
    triangles = np.concatenate(tris)
    frame = habitat_frame(path)
    where = f"{path}: {frame.get('config', 'option up_axis')}"
    if up_axis is not None:
        frame = {"up": up_axis, "front": frame.get("front")}
        where = f"{path}: option up_axis"
    if "up" in frame or "front" in frame:
        up = _vector(where, "up", frame.get("up", (0.0, 1.0, 0.0)))
        front = frame.get("front")
        front = None if front is None else _vector(where, "front", front)
        rotation = _frame_rotation(up, front)
        triangles = triangles @ rotation.T
        for obj in instances.values():
            corners = np.stack(np.meshgrid(*zip(obj.aabb_min, obj.aabb_max), indexing="ij"), -1)
            corners = corners.reshape(-1, 3) @ rotation.T
            obj.aabb_min, obj.aabb_max = corners.min(0), corners.max(0)
    if "scale" in frame:
        scale = _vector(where, "scale", frame["scale"]) if not np.isscalar(frame["scale"]) else np.full(3, float(frame["scale"]))  # fmt: skip
        triangles = triangles * scale
        for obj in instances.values():
            lo, hi = obj.aabb_min * scale, obj.aabb_max * scale
            obj.aabb_min, obj.aabb_max = np.minimum(lo, hi), np.maximum(lo, hi)
    axis = sideways_axis(triangles)
    if axis is not None:
        import warnings

        warnings.warn(
            f"{path}: the scene looks sideways (it is thinnest along {axis}, not y, after its "
            "frame was applied): if it was authored z up, pass up_axis='z' or give it "
            'a habitat stage config with "up": [0, 0, 1]',
            stacklevel=2,
        )
    return Scene(
        triangles=triangles.astype(np.float32),
        face_color=np.concatenate(colors),
        face_instance=np.concatenate(inst),
        instances=instances,
        face_uv=np.concatenate(uvs),
        face_texture=np.concatenate(texs),
        textures=np.stack(textures) if textures else None,
        name=os.path.basename(path),
    )


def _category_of(name: str) -> tuple[str, str] | None:
    low = name.lower()
    for cat in _CATEGORIES:
        if re.match(rf"^{cat}(?:$|[_.\-\s]\d*)", low):
            return cat, low
    return None


def _appearance(mesh, faces: np.ndarray, textures: list, texture_size: int):
    """(face colours (n, 3) uint8, face uvs (n, 3, 2), texture index or -1)."""
    import trimesh

    n = len(faces)
    visual = mesh.visual
    white = np.full((n, 3), 255, np.uint8)
    if isinstance(visual, trimesh.visual.TextureVisuals):
        material = visual.material
        image = getattr(material, "baseColorTexture", None) or getattr(material, "image", None)
        if isinstance(material, trimesh.visual.material.PBRMaterial):
            base = material.baseColorFactor  # glTF: absent means white
        else:
            base = getattr(material, "diffuse", None)
        tint = np.asarray(base if base is not None else [255, 255, 255, 255], dtype=np.float64)[:3]
        if tint.max() <= 1.0:
            tint = tint * 255
        color = np.tile(np.clip(tint, 0, 255).astype(np.uint8), (n, 1))
        if image is not None and visual.uv is not None and len(visual.uv):
            import cv2

            img = np.asarray(image.convert("RGB"))
            textures.append(
                cv2.resize(img, (texture_size, texture_size), interpolation=cv2.INTER_AREA)
            )
            return color, np.asarray(visual.uv, np.float32)[faces], len(textures) - 1
        return color, np.zeros((n, 3, 2), np.float32), -1
    try:
        fc = np.asarray(visual.face_colors)[:, :3]
        if fc.shape == (n, 3):
            return fc.astype(np.uint8), np.zeros((n, 3, 2), np.float32), -1
    except Exception:
        pass
    return white, np.zeros((n, 3, 2), np.float32), -1


def export_glb(scene: Scene, path: str | os.PathLike) -> None:
    """Write ``scene`` as .glb: one mesh per instance named ``<category>_<id>`` (so semantics
    survive a round trip), face colours as colour visuals. Textures are not exported."""
    import trimesh

    out = trimesh.Scene()
    for iid in np.unique(scene.face_instance):
        sel = scene.face_instance == iid
        tris = scene.triangles[sel].astype(np.float64)
        verts = tris.reshape(-1, 3)
        faces = np.arange(len(verts)).reshape(-1, 3)
        colors = np.concatenate([scene.face_color[sel], np.full((sel.sum(), 1), 255, np.uint8)], 1)
        mesh = trimesh.Trimesh(verts, faces, face_colors=colors, process=False)
        name = (
            f"{scene.instances[iid].category}_{iid}"
            if iid in scene.instances
            else f"unlabelled_{iid}"
        )
        out.add_geometry(mesh, node_name=name, geom_name=name)
    out.export(os.fspath(path), file_type="glb")
