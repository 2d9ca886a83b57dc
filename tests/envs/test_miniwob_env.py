"""MiniWoB++ through pixelrl's observation and Action, in headless Chromium."""

from __future__ import annotations

import shutil

import gymnasium
import numpy as np
import pytest

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import Action, ActionError, to_pyautogui, to_uitars
from pixelrl.envs.web.browser import BrowserNotFound
from pixelrl.envs.web.env import MiniWoBEnv, miniwob_key
from pixelrl.envs.web.oracle import plan

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)


def find(a11y, **want):
    return next(e for e in a11y if all(e.get(k) == v for k, v in want.items()))


@needs_browser
@pytest.mark.parametrize(
    "task",
    ["click-test", "click-button", "enter-text", "click-checkboxes", "focus-text", "login-user"],
)
def test_reset_and_step(task):
    env = gymnasium.make(f"pixelrl/MiniWoB-{task}-v0").unwrapped
    try:
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert obs["screenshot"].shape == (210, 160, 3) and obs["screenshot"].std() > 0
        assert obs["instruction"] and info["task"] == task
        for e in info["a11y"]:
            x0, y0, x1, y1 = e["bbox"]
            assert 0 <= x0 < x1 <= 160 and 0 <= y0 < y1 <= 210
        # The instruction is drawn at the top of the screenshot (miniwob's yellow query bar).
        top = obs["screenshot"][:50].astype(int)
        yellow = (top[..., 0] > 200) & (top[..., 1] > 200) & (top[..., 2] < 100)
        assert yellow.mean() > 0.5
        target = next(e for e in info["a11y"] if e["role"] in ("button", "textbox", "checkbox"))
        obs, reward, terminated, truncated, info = env.step(
            Action.click(*bbox_center(target["bbox"]))
        )
        assert env.observation_space.contains(obs)
        assert info["step"] == 1 and isinstance(reward, float)
        if not terminated:
            clicked = find(info["a11y"], id=target["id"])
            assert clicked["state"].get("tampered") or clicked["focused"]
    finally:
        env.close()


@needs_browser
def test_same_seed_same_episode_and_check_env():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("pixelrl/MiniWoB-click-button-v0").unwrapped
    try:
        a, info_a = env.reset(seed=7)
        b, info_b = env.reset(seed=7)
        c, _ = env.reset(seed=8)
        assert a["instruction"] == b["instruction"] and np.array_equal(
            a["screenshot"], b["screenshot"]
        )
        assert [e["bbox"] for e in info_a["a11y"]] == [e["bbox"] for e in info_b["a11y"]]
        assert not np.array_equal(a["screenshot"], c["screenshot"])
        check_env(env, skip_render_check=True)
    finally:
        env.close()


@needs_browser
def test_every_key_the_space_holds_is_pressed_through_webdriver():
    # WebDriver takes one code point a key: a key name we cannot map must be out of the space
    from pixelrl.envs.gui_action import KEY_NAMES

    env = MiniWoBEnv("click-button", max_steps=1000)
    try:
        env.reset(seed=0)
        pressable = [k for k in KEY_NAMES if k not in env.REFUSED_KEYS]
        for key in pressable:
            _, _, terminated, truncated, _ = env.step(Action.key(key))
            if terminated or truncated:
                env.reset(seed=0)
        for key in env.REFUSED_KEYS:
            with pytest.raises(ActionError, match="MiniWoB backend cannot press"):
                env.step(Action.key(key))
    finally:
        env.close()


@needs_browser
def test_same_seed_and_actions_give_the_same_step_info():
    """a11y ids are positions in the page, not miniwob's ref counter (which runs on across
    episodes): repeating a seed and its actions repeats every info field, ending included."""
    from gymnasium.utils.env_checker import data_equivalence

    env = gymnasium.make("pixelrl/MiniWoB-click-button-v0").unwrapped
    actions = [Action.drag(10, 60, 80, 120), Action.type_text("ab"), Action.done()]
    try:
        runs = []
        for _ in range(2):
            _, info = env.reset(seed=123)
            infos = [info]
            for action in actions:
                *_, info = env.step(action)
                infos.append(info)
            runs.append(infos)
        for first, second in zip(*runs):
            assert data_equivalence(first, second)
        assert runs[0][-1]["raw_reward"] == -1.0  # `done` before the task ended: a failure
    finally:
        env.close()


@needs_browser
def test_pixel_mapping_at_scale_2():
    """Boxes scale with the screenshot and clicks land: the DOM-to-pixel map both ways."""
    small = MiniWoBEnv("click-test-2")
    big = MiniWoBEnv("click-test-2", scale=2)
    try:
        s_obs, s_info = small.reset(seed=2)
        b_obs, b_info = big.reset(seed=2)
        assert b_obs["screenshot"].shape == (420, 320, 3)
        for s, b in zip(s_info["a11y"], b_info["a11y"]):
            assert [2 * v for v in s["bbox"]] == b["bbox"]
        # The button's border lies exactly on its bbox edge: just inside is darker than just out.
        x0, y0, x1, y1 = find(b_info["a11y"], name="ONE")["bbox"]
        img = b_obs["screenshot"].astype(int).sum(axis=2)
        xm, ym = (x0 + x1) // 2, (y0 + y1) // 2
        for inside, outside in [
            (img[y0, xm], img[y0 - 2, xm]),
            (img[y1 - 1, xm], img[y1 + 1, xm]),
            (img[ym, x0], img[ym, x0 - 2]),
            (img[ym, x1 - 1], img[ym, x1 + 1]),
        ]:
            assert inside < outside - 100
        [action] = plan("click-test-2", b_obs["instruction"], b_info["a11y"])
        _, reward, terminated, _, info = big.step(action)
        assert (reward, terminated, info["success"]) == (1.0, True, True)
    finally:
        small.close()
        big.close()


@needs_browser
def test_text_actions_through_the_codec():
    """Action text (pyautogui and UI-TARS syntax) parsed by pixelrl.envs.gui_action, executed in the page."""
    env = MiniWoBEnv("login-user")
    try:
        obs, info = env.reset(seed=3)
        actions = plan("login-user", obs["instruction"], info["a11y"])
        for action in actions:
            text = to_pyautogui(action)
            obs, reward, terminated, _, info = env.step(text)
        assert info["success"] and reward == 1.0
        obs, info = env.reset(seed=4)
        for action in plan("login-user", obs["instruction"], info["a11y"]):
            obs, reward, terminated, _, info = env.step(to_uitars(action, env.screen_size))
        assert info["success"]
        # Keys reach the page as the key events we meant: listen to them in the page itself.
        env2 = MiniWoBEnv("enter-text")
        try:
            obs, info = env2.reset(seed=1)
            env2.driver.execute_script(
                "window.__keys = []; document.addEventListener('keydown', e => {"
                "  if (['Control', 'Shift', 'Alt', 'Meta'].includes(e.key)) return;"
                "  window.__keys.push((e.ctrlKey ? 'C-' : '') + (e.shiftKey ? 'S-' : '') + e.key); });"
            )
            box = find(info["a11y"], role="textbox")
            word = obs["instruction"].split('"')[1]
            env2.step(
                f"pyautogui.click(x={bbox_center(box['bbox'])[0]}, y={bbox_center(box['bbox'])[1]})"
            )
            env2.step(f"type(content='{word}x')")
            obs, _, _, _, info = env2.step("pyautogui.press('backspace')")
            assert find(info["a11y"], role="textbox")["state"]["value"] == word
            env2.step("type(content='\\n')")
            env2.step("pyautogui.hotkey('ctrl', 'a')")
            env2.step("hotkey(key='shift tab')")
            env2.step("pyautogui.hotkey('ctrl', 'shift')")  # modifiers alone: no key event here
            env2.step("hotkey(key='tab home')")  # no modifier at all: each key in turn
            keys = env2.driver.execute_script("return window.__keys;")
            assert keys[-7:] == ["x", "Backspace", "Enter", "C-a", "S-Tab", "Tab", "Home"]
            assert keys[: len(word)] == [("S-" if c.isupper() else "") + c for c in word]
        finally:
            env2.close()
        with pytest.raises(ActionError):
            env.step("__import__('os').system('true')")
    finally:
        env.close()


@needs_browser
def test_reward_processors_and_giving_up():
    raw = MiniWoBEnv("click-test-2", reward_processor="raw")
    original = MiniWoBEnv("click-test-2", reward_processor="original")
    try:
        for seed in (0, 1):
            results = []
            for env in (raw, original):
                obs, info = env.reset(seed=seed)
                [right] = plan("click-test-2", obs["instruction"], info["a11y"])
                _, reward, terminated, _, info = env.step(right)
                results.append((reward, info["raw_reward"]))
            (r_raw, _), (r_orig, raw_of_orig) = results
            assert r_raw == 1.0 and raw_of_orig == 1.0 and 0.0 < r_orig <= 1.0  # time-penalised
        binary = raw  # same page, other processor: switch it to check the ±1 mapping
        binary.reward_processor = "binary"
        obs, info = binary.reset(seed=0)
        wrong = next(
            e for e in info["a11y"] if e["role"] == "button" and e["name"] not in obs["instruction"]
        )
        _, reward, terminated, _, info = binary.step(Action.click(*bbox_center(wrong["bbox"])))
        if terminated:  # a wrong click ends click-test-2 with -1
            assert reward == -1.0 and not info["success"]
        obs, info = binary.reset(seed=0)
        _, reward, terminated, _, info = binary.step(Action.done())  # claiming success unearned
        assert (reward, terminated, info["success"]) == (-1.0, True, False)
        with pytest.raises(ValueError, match="reward_processor"):
            MiniWoBEnv("click-test-2", reward_processor="shaped")
    finally:
        raw.close()
        original.close()


def test_key_names_map_to_miniwob_syntax():
    assert miniwob_key("enter") == "<Enter>"
    assert miniwob_key("a", ("ctrl",)) == "C-a"
    assert miniwob_key("left", ("ctrl", "shift")) == "C-S-<ArrowLeft>"
    assert miniwob_key("f5") == "<F5>"
    assert miniwob_key("/") == "/"


def test_missing_browser_says_what_to_install(monkeypatch):
    with pytest.raises(BrowserNotFound, match="apt-get install chromium chromium-driver"):
        MiniWoBEnv("click-test", chrome_binary="/nonexistent/chromium")
    monkeypatch.setenv("MINIWOB_CHROMEDRIVER", "/nonexistent/chromedriver")
    with pytest.raises(
        BrowserNotFound,
        match=r"chromedriver not found at '/nonexistent/chromedriver' \(from \$MINIWOB_CHROMEDRIVER\)",
    ):
        MiniWoBEnv("click-test")


@needs_browser
@pytest.mark.parametrize("ending", ["close", "crash", "SIGKILL"])
def test_no_browser_left_behind(ending):
    """chromedriver and Chrome go away on close, after a crash inside step, and when the Python
    process is killed outright (the reaper)."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    from pixelrl.envs.processes import wait_groups_gone

    script = textwrap.dedent(
        f"""
        import json, os, signal, time
        from pixelrl.envs.web.env import MiniWoBEnv
        from pixelrl.envs.gui_action import Action
        env = MiniWoBEnv("click-test")
        env.reset(seed=0)
        print(json.dumps([env.driver.service.process.pid]), flush=True)
        if {ending!r} == "close":
            env.close()
        elif {ending!r} == "crash":
            env.driver.service.process.kill()   # chromedriver dies under the env
            try:
                env.step(Action.click(5, 5))
            except Exception:
                pass
            else:
                raise SystemExit("step did not fail")
        else:
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert "step did not fail" not in run.stderr
    pgids = json.loads(run.stdout.strip().splitlines()[0])
    assert wait_groups_gone(pgids, timeout_s=10) == []
