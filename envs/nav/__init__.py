"""The embedded 3D navigation simulator: habitat's tasks, sensors and episode files on any CPU.

Map of the package (one idea per module):

- ``scene``       the triangle-mesh scene: per-face colour, texture, semantic instance; categories
- ``apartment``   the seeded procedural apartment generator (rooms, doors, corridors, furniture)
- ``mesh_io``     external scenes (.glb/.gltf/.obj/.ply) through trimesh, and .glb export
- ``config``      ``NavConfig``: every env option with habitat's defaults
- ``renderer``    the Embree ray-cast pinhole camera: RGB, depth, semantic, many agents per call
- ``raster``      the numba z-buffer rasterizer: the same pictures as ``renderer``, several x faster
- ``navgrid``     the navigability grid, collision with wall sliding, line of sight
- ``levels``      multi-storey scenes: a grid per floor level, joined at the stairs
- ``house``       a two-storey house with a staircase (the multi-storey test scene)
- ``geodesic``    geodesic distance fields on the grid (Dijkstra, nearest of several goals)
- ``follower``    ``ShortestPathFollower``: the expert that returns the next action
- ``viewpoints``  ObjectNav view points (navigable, within 1 m, object visible)
- ``geometry``    habitat's conventions: y up, quaternions ``[x, y, z, w]``, polar goals
- ``dataset``     episodes: generation with habitat's rules, habitat ``.json.gz`` read/write
- ``instructions`` InstructNav: route instructions from an apartment's rooms, doors and objects
- ``measures``    the measure registry (Success, SPL, SoftSPL, DistanceToGoal, ...): one class each
- ``tasks``       PointNav, ObjectNav, InstructNav: the agent's state, observations, reward
- ``sim``         ``NavSim``: scenes + renderer + N agents, the batched core of the envs;
                  ``generate_dataset`` writes a habitat episode file
- ``env``         ``NavEnv`` (``pixelrl/PointNav-v0``, ``pixelrl/ObjectNav-v0``, ``pixelrl/InstructNav-v0``)
- ``vector_env``  ``NavVectorEnv``: a native ``gymnasium.vector.VectorEnv``, one renderer call a step
- ``topdown``     the top-down map (occupancy, path, goal) as an image / PNG

Conventions (habitat's): y is up, the agent looks along -z at yaw 0, turning left increases yaw,
rotations are quaternions ``[x, y, z, w]``, distances are metres. Nothing heavy is imported here.
"""
