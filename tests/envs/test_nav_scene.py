"""The procedural apartment generator: seeded, knobs respected, plausible furniture."""

from __future__ import annotations

import numpy as np
import pytest

from pixelrl.envs.nav.apartment import FURNITURE, ApartmentConfig, generate_apartment
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES


def _rooms(scene) -> int:
    floor = next(i for i, inst in scene.instances.items() if inst.category == "floor")
    return int((scene.face_instance == floor).sum() // 2)  # one quad per room


def test_same_seed_same_scene_and_different_seeds_differ():
    a, b, c = generate_apartment(4), generate_apartment(4), generate_apartment(5)
    np.testing.assert_array_equal(a.triangles, b.triangles)
    np.testing.assert_array_equal(a.face_color, b.face_color)
    np.testing.assert_array_equal(a.textures, b.textures)
    assert a.triangles.shape != c.triangles.shape or not np.array_equal(a.triangles, c.triangles)


@pytest.mark.parametrize("rooms", [(1, 1), (3, 3), (8, 8)])
def test_room_count_knob(rooms):
    counts = {_rooms(generate_apartment(s, ApartmentConfig(rooms=rooms))) for s in range(3)}
    assert counts == {rooms[0]}


def test_clutter_knob_and_furniture_sizes():
    bare = generate_apartment(1, ApartmentConfig(clutter=0.0))
    assert not bare.goal_instances()
    busy = generate_apartment(1, ApartmentConfig(clutter=2.0))
    items = busy.goal_instances()
    assert len(items) >= 8
    for inst in items:
        assert inst.category in OBJECTNAV_CATEGORIES
        size = inst.aabb_max - inst.aabb_min
        (wx, wz, hy, _) = FURNITURE[inst.category]
        footprint = sorted(size[[0, 2]])
        assert footprint[1] <= max(wx[1], wz[1]) + 1e-6  # no bigger than its category allows
        assert 0.3 <= size[1] <= 2.0  # plausible heights (beds, plants, tvs on stands ...)


def test_every_generated_apartment_is_one_connected_home():
    for seed in range(6):
        scene = generate_apartment(seed)
        grid = NavGrid(scene)
        big = grid.largest_island()
        share = (grid.islands == big).sum() / grid.navigable.sum()
        assert share > 0.95, f"seed {seed}: rooms cut off ({share:.2f} of the floor is reachable)"


def test_bad_knobs_name_the_field():
    with pytest.raises(ValueError, match="rooms"):
        generate_apartment(0, ApartmentConfig(rooms=(0, 9)))
    with pytest.raises(ValueError, match="clutter"):
        generate_apartment(0, ApartmentConfig(clutter=-1))
