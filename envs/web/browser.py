"""Finding Chromium and chromedriver, and starting a headless Chrome that works as root offline.

Where the programs come from, first match wins: the function argument, then the environment
variables ``MINIWOB_CHROME_BINARY`` / ``MINIWOB_CHROMEDRIVER`` (the names the miniwob package
reads), then PATH (``chromium``, ``chromium-browser``, ``google-chrome``; ``chromedriver``).
"""

from __future__ import annotations

import os
import shutil

BROWSER_INSTALL_HINT = (
    "install Chromium and its driver: `apt-get install chromium chromium-driver` on Debian "
    "(or run scripts/install_system_deps.sh), or point MINIWOB_CHROME_BINARY and "
    "MINIWOB_CHROMEDRIVER at them"
)
CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVER_NAMES = ("chromedriver",)

# Flags for a headless browser started as root in a container with no network:
# no sandbox (needs user namespaces root lacks), no GPU, /tmp instead of a small /dev/shm,
# and none of the background traffic (updates, sync, first-run) that would wait on a network.
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--mute-audio",
)


class BrowserNotFound(FileNotFoundError):
    """Chromium or chromedriver is missing; the message says what to install."""


def _find(what: str, explicit: str | None, env_var: str, names: tuple[str, ...]) -> str:
    wanted = explicit or os.environ.get(env_var)
    if wanted:
        found = shutil.which(wanted)
        if found is None:
            source = "argument" if explicit else f"${env_var}"
            raise BrowserNotFound(
                f"{what} not found at {wanted!r} (from {source}): {BROWSER_INSTALL_HINT}"
            )
        return found
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserNotFound(
        f"{what} not found on PATH (looked for {', '.join(names)}): {BROWSER_INSTALL_HINT}"
    )


def find_chrome(chrome_binary: str | None = None) -> str:
    return _find("Chromium", chrome_binary, "MINIWOB_CHROME_BINARY", CHROME_NAMES)


def find_chromedriver(chromedriver: str | None = None) -> str:
    return _find("chromedriver", chromedriver, "MINIWOB_CHROMEDRIVER", DRIVER_NAMES)


def start_chrome(
    chrome_binary: str,
    chromedriver: str,
    window_size: tuple[int, int],
    device_scale_factor: float = 1.0,
):
    """A selenium ``webdriver.Chrome`` on a headless Chromium with :data:`CHROME_FLAGS`.

    chromedriver (and the Chrome it starts) gets a process group of its own, killed by
    :func:`quit_chrome`, at interpreter exit, and by a :class:`~pixelrl.envs.processes.GroupReaper` when
    this process dies without running any Python (SIGKILL).
    """
    import weakref

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from pixelrl.envs.processes import GroupReaper, kill_group, own_group_popen_kwargs

    options = webdriver.ChromeOptions()
    options.binary_location = chrome_binary
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={window_size[0]},{window_size[1]}")
    options.add_argument(f"--force-device-scale-factor={device_scale_factor}")
    service = Service(executable_path=chromedriver, popen_kw=own_group_popen_kwargs())
    driver = webdriver.Chrome(service=service, options=options)
    pgid = service.process.pid
    driver._pixelrl_reaper = GroupReaper(pgid)  # kills Chrome too if this process is SIGKILLed
    driver._pixelrl_group = weakref.finalize(driver, kill_group, pgid)
    return driver


def quit_chrome(driver) -> None:
    """Quit the browser politely, then kill its process group (whatever quit left behind)."""
    try:
        driver.quit()
    except (
        Exception
    ):  # the browser or driver may be dead already; the group kill below is what counts
        pass
    finalizer = getattr(driver, "_pixelrl_group", None)
    if finalizer is not None:
        finalizer()
    reaper = getattr(driver, "_pixelrl_reaper", None)
    if reaper is not None:
        reaper.release()
