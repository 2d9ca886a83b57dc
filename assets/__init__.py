"""Small files pixelrl ships: fonts (DejaVu, Bitstream Vera licence), task specs, test apps and scenes."""

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent
FONTS_DIR = ASSETS_DIR / "fonts"
