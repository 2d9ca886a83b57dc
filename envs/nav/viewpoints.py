"""ObjectNav view points: navigable spots within ``radius`` of an object that can see it.

Like habitat's ObjectNav datasets, success is judged against these points (within 0.1 m), not
the object's centre, so an agent need not touch the object. A cell is a view point when its
centre is within ``radius`` (1 m) of the object's footprint and a ray from the sensor height
there to the object's centre or its top first hits that object (``face_instance``).
"""

from __future__ import annotations

import numpy as np

from pixelrl.envs.nav.scene import ObjectInstance

SENSOR_HEIGHT = 1.25


def view_points(grid, instance: ObjectInstance, radius: float = 1.0) -> np.ndarray:
    """View points ``(K, 3)`` of ``instance`` on ``grid`` (cached on the grid)."""
    cache = grid.__dict__.setdefault("_view_points", {})
    key = (instance.instance_id, radius)
    if key in cache:
        return cache[key]
    lo, hi = instance.aabb_min, instance.aabb_max
    # The footprint's cells on every floor level (a multi-storey grid stacks its levels'
    # rows); the visibility test below keeps the ones on the object's own floor.
    flat = getattr(grid, "levels", [grid])[0]
    r0, c0 = flat.to_cell(np.array([lo[0] - radius, 0, lo[2] - radius]))
    r1, c1 = flat.to_cell(np.array([hi[0] + radius, 0, hi[2] + radius]))
    rr, cc = np.mgrid[r0 : r1 + 1, c0 : c1 + 1]
    stride = getattr(grid, "level_rows", grid.rows)
    rr = np.concatenate([rr.ravel() + k * stride for k in range(grid.rows // stride)])
    cc = np.tile(cc.ravel(), grid.rows // stride)
    keep = grid.navigable[rr, cc]
    rr, cc = rr[keep], cc[keep]
    pts = grid.cell_centre(rr, cc)
    dx = np.maximum(np.maximum(lo[0] - pts[:, 0], pts[:, 0] - hi[0]), 0)
    dz = np.maximum(np.maximum(lo[2] - pts[:, 2], pts[:, 2] - hi[2]), 0)
    pts = pts[np.hypot(dx, dz) <= radius]
    if len(pts):
        pts = pts[_visible(grid, instance, pts)]
    cache[key] = pts
    return pts


def _visible(grid, instance: ObjectInstance, pts: np.ndarray) -> np.ndarray:
    from embreex import mesh_construction, rtcore_scene

    embree = grid.__dict__.get("_embree")
    if embree is None:
        embree = rtcore_scene.EmbreeScene()
        mesh_construction.TriangleMesh(embree, grid.scene.triangles)
        grid.__dict__["_embree"] = embree
    eyes = pts.copy()
    eyes[:, 1] += SENSOR_HEIGHT
    centre = instance.center
    top = np.array([centre[0], instance.aabb_max[1] - 0.02, centre[2]])
    visible = np.zeros(len(pts), bool)
    for target in (centre, top):
        d = (target - eyes).astype(np.float32)
        hit = embree.run(
            eyes.astype(np.float32), d, dists=np.full(len(pts), 1.01, np.float32), output=True
        )
        prim = hit["primID"]
        ok = prim >= 0
        ids = np.zeros(len(pts), np.int32)
        ids[ok] = grid.scene.face_instance[prim[ok]]
        visible |= ids == instance.instance_id
    return visible


def view_ious(
    grid, instance: ObjectInstance, pts: np.ndarray, size: int = 24, hfov: float = 90.0
) -> np.ndarray:
    """habitat's ``ObjectViewLocation.iou`` at each view point ``(K,)``: the agent at the point,
    camera at sensor height facing the object's centre (yaw only), a ``size`` x ``size`` view of
    ``hfov`` degrees; the intersection over union of the object's pixels and the centre
    rectangle (half the width and height). 1 when the object fills exactly that rectangle."""
    from embreex import mesh_construction, rtcore_scene

    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
    if len(pts) == 0:
        return np.zeros(0)
    embree = grid.__dict__.get("_embree")
    if embree is None:
        embree = rtcore_scene.EmbreeScene()
        mesh_construction.TriangleMesh(embree, grid.scene.triangles)
        grid.__dict__["_embree"] = embree
    t = np.tan(np.radians(hfov) / 2)
    u = (np.arange(size) + 0.5) / size * 2 - 1  # -1..1 across the image
    uu, vv = np.meshgrid(u * t, -u * t)  # right, up (rows top to bottom)
    rect = (np.abs(uu) <= t / 2) & (np.abs(vv) <= t / 2)
    eyes = pts.copy()
    eyes[:, 1] += SENSOR_HEIGHT
    to = instance.center[None] - eyes
    yaw = np.arctan2(-to[:, 0], -to[:, 2])
    fwd = np.stack([-np.sin(yaw), np.zeros_like(yaw), -np.cos(yaw)], 1)
    right = np.stack([np.cos(yaw), np.zeros_like(yaw), -np.sin(yaw)], 1)
    up = np.array([0.0, 1.0, 0.0])
    dirs = (
        fwd[:, None, None]
        + uu[None, :, :, None] * right[:, None, None]
        + vv[None, :, :, None] * up[None, None, None]
    ).reshape(-1, 3)
    origins = np.repeat(eyes, size * size, 0)
    prim = embree.run(origins.astype(np.float32), dirs.astype(np.float32))
    ids = np.where(prim >= 0, grid.scene.face_instance[np.maximum(prim, 0)], -1)
    obj = (ids == instance.instance_id).reshape(len(pts), size, size)
    inter = (obj & rect).sum(axis=(1, 2))
    union = (obj | rect).sum(axis=(1, 2))
    return inter / union
