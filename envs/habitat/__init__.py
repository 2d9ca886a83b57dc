"""The habitat-sim backend of ``pixelrl/PointNav-v0`` and ``pixelrl/ObjectNav-v0``.

Selected with ``gymnasium.make(id, backend="habitat", ...)``. habitat-sim is conda-only
(``conda install habitat-sim -c conda-forge -c aihabitat``); it is imported lazily, so this
package imports everywhere and constructing the env without it raises
:class:`HabitatNotInstalled` with those instructions.
"""

from pixelrl.envs.habitat.env import HABITAT_INSTALL_HINT, HabitatNotInstalled, import_habitat_sim

__all__ = ["HABITAT_INSTALL_HINT", "HabitatNotInstalled", "import_habitat_sim"]
