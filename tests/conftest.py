"""Settings every test shares: no model hub, no user display, Chromium from Debian."""

import os

# Tests build tiny models from config; nothing may be fetched from a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Never touch a real screen by accident: backends start their own Xvfb.
os.environ.pop("DISPLAY", None)
for var, path in (
    ("MINIWOB_CHROME_BINARY", "/usr/bin/chromium"),
    ("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver"),
):
    if var not in os.environ and os.path.exists(path):
        os.environ[var] = path
