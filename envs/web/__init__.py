"""The MiniWoB++ backend: every miniwob task as pixelrl/MiniWoB-<task>-v0 in headless Chromium.

Modules: ``browser`` (finding Chromium/chromedriver, flags for headless-as-root offline),
``env`` (:class:`~pixelrl.envs.web.env.MiniWoBEnv`: observation, Action mapping, rewards) and ``oracle``
(a scripted expert for click and type tasks that acts through pixel coordinates only).
"""
