"""The real X11 desktop backend: tasks on real apps under a private Xvfb (pixelrl/XDesktop-*).

Modules: ``display`` (Xvfb, or an existing display by opt-in), ``windows`` (top-level windows
via python-xlib), ``actuator`` (the process that acts with pyautogui and looks with mss),
``helper`` (the processes those two run in: every host request on a task's display has a
deadline; ``helper_loop`` is their side),
``tasks`` (OSWorld-style task files: set-up, getters, checkers) and ``env``
(:class:`~pixelrl.envs.x11.env.XDesktopEnv`). Child processes are :class:`pixelrl.envs.processes.ChildProcess`
(own process group, never left behind). Nothing here imports pyautogui or touches a display
until an env is made.
"""
