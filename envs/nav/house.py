"""A two-storey house with a straight staircase: the smallest scene whose geodesics climb.

Ground floor at y = 0, upper floor at ``storey`` metres (a slab ``slab`` thick, open over the
stairs where they would meet the head of an agent going up), a roof slab above. The stairs run
along the inner face of the ``z = 0`` wall in +x, as solid blocks (nothing to walk under),
``steps`` risers of ``storey / steps`` metres -- below habitat's 0.2 m ``max_climb`` -- so the
upper floor is reachable only by them. Rooms on each floor (a partition wall with a doorway)
make the paths turn.
"""

from __future__ import annotations

from pixelrl.envs.nav.scene import Scene, SceneBuilder

WALL, FLOOR, STAIRS, SLAB = (200, 190, 170), (120, 100, 80), (150, 60, 50), (180, 180, 180)
FURNITURE = {"bed": (60, 90, 160), "sofa": (70, 140, 70), "chair": (160, 120, 40)}


def two_storey_house(
    storey: float = 3.0,
    slab: float = 0.1,
    steps: int = 16,
    run: float = 0.28,
    stair_width: float = 1.0,
    size: tuple[float, float] = (8.0, 6.0),
) -> Scene:
    """The house (see the module docstring); ``floor_levels`` = (0, ``storey``)."""
    width, depth = size
    rise = storey / steps
    t = 0.1  # wall thickness
    b = SceneBuilder("two_storey_house")
    b.add_box((0, -slab, 0), (width, 0, depth), FLOOR, b.new_instance("floor"))
    wall = b.new_instance("wall")
    top = 2 * storey
    for lo, hi in (
        ((0, 0, 0), (width, top, t)),
        ((0, 0, depth - t), (width, top, depth)),
        ((0, 0, 0), (t, top, depth)),
        ((width - t, 0, 0), (width, top, depth)),
    ):
        b.add_box(lo, hi, WALL, wall)
    b.add_box((0, top, 0), (width, top + slab, depth), SLAB, b.new_instance("ceiling"))
    # Stairs: step k (1..steps-1) is a solid block from the ground to k * rise; the last riser
    # climbs onto the upper slab, which starts where the stairs end.
    x0, z0, z1 = 1.0, t, t + stair_width
    stairs = b.new_instance("stairs")
    for k in range(1, steps):
        b.add_box((x0 + (k - 1) * run, 0, z0), (x0 + k * run, k * rise, z1), STAIRS, stairs)
    end = x0 + (steps - 1) * run
    # The opening over the stairs: from the first step whose tread an agent's head (1.5 m) would
    # bring within a slab of the ceiling, to the top of the stairs.
    first_open = next(k for k in range(1, steps) if k * rise + 1.6 >= storey - slab)
    open_x = x0 + (first_open - 1) * run
    upper = b.new_instance("floor")
    for lo, hi in (
        ((0, storey - slab, z1), (width, storey, depth)),  # beside the stairwell
        ((0, storey - slab, 0), (open_x, storey, z1)),  # over the foot of the stairs
        ((end, storey - slab, 0), (width, storey, z1)),  # the landing at the top
    ):
        b.add_box(lo, hi, SLAB, upper)
    # A partition on each floor with a doorway, so that paths turn.
    for y0 in (0.0, storey):
        for z_lo, z_hi in ((z1 + 0.8, 3.2), (4.2, depth - t)):
            b.add_box((5.5, y0, z_lo), (5.6, y0 + storey - slab, z_hi), WALL, wall)
    # Furniture: ObjectNav goals on each floor (a bed upstairs, a sofa and a chair below).
    for category, lo, hi in (
        ("bed", (6.2, storey, 4.0), (7.8, storey + 0.5, 5.8)),
        ("sofa", (6.6, 0, 1.4), (7.8, 0.8, 2.3)),
        ("chair", (2.0, 0, 4.6), (2.5, 0.9, 5.1)),
    ):
        b.add_box(lo, hi, FURNITURE[category], b.new_instance(category))
    return b.build(floor_height=0.0, floor_levels=(0.0, storey))
