"""OpenEnv's name for an env package's client module (its ``AutoEnv`` imports
``<module>.client``): pixelrl's typed client and models, which live in
:mod:`pixelrl.serve_client`."""

from pixelrl.serve_client import GuiAction, NavAction, PixelrlEnv, PixelrlObservation

__all__ = ["GuiAction", "NavAction", "PixelrlEnv", "PixelrlObservation"]
