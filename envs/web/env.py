"""MiniWoBEnv: a MiniWoB++ task in headless Chromium, with pixelrl's observation and Action.

The page logic is the ``miniwob`` package's own (its ``SeleniumInstance`` loads the task page,
seeds it, starts and scores episodes, and executes its action primitives); this env swaps in
a browser started with flags that work as root offline (:mod:`pixelrl.envs.web.browser`), takes its
own screenshots, and maps between pixelrl's pixels and the page's CSS pixels.

Coordinates. The task area is the page's top-left ``task_width × task_height`` CSS pixels
(160×210; 375×667 for flight.*). The screenshot shows it at ``scale`` screen pixels per CSS pixel
(Chrome renders at device scale factor ``scale``, so nothing is resampled): screen pixel
(x, y) covers CSS [x/s, (x+1)/s) and an element with CSS box (left, top, width, height) has the
pixel bbox [floor(left·s), floor(top·s), ceil((left+width)·s), ceil((top+height)·s)), clipped
to the screen. A pointer action at pixel (x, y) acts at CSS ((x+0.5)/s, (y+0.5)/s), floored.

Actions map onto miniwob's primitives: move/click/double_click → MOVE/CLICK/DBLCLICK_COORDS,
drag → one W3C pointer gesture (press, :data:`DRAG_MOVES` moves along the line, release: what
jQuery UI's draggable, sortable, slider and resizable and the browser's text selection follow),
scroll → wheel at the point (``dy`` notches of miniwob's 50 px, positive down), type → TYPE_TEXT (``\\n`` and ``\\t`` become Enter and Tab), key/hotkey →
PRESS_KEY in miniwob's key syntax; right_click is a W3C context click. ``done`` and ``fail``
end the episode; if the task has not ended by itself that counts as a failure (-1).

Rewards (``reward_processor``): ``"raw"`` (default: the task's reward without the time
penalty, in [-1, 1]; deterministic), ``"binary"`` (+1 for a perfect raw reward, else -1) or
``"original"`` (MiniWoB's reward, scaled by the time left: it depends on wall-clock time, so
the same actions can earn different rewards). Rewards arrive when the task ends; 0 before.
MiniWoB tasks also end by themselves after their own time limit (10 s for most) with -1.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from pixelrl.envs.gui import MAX_INSTRUCTION_LENGTH, a11y_element
from pixelrl.envs.gui_action import MODIFIER_KEYS, TEXT_CHARSET, Action, ActionError
from pixelrl.envs.real_gui import Outcome, RealGuiEnv
from pixelrl.envs.web.browser import find_chrome, find_chromedriver, quit_chrome, start_chrome

REWARD_PROCESSORS = ("raw", "binary", "original")
DEFAULT_MAX_STEPS = 30
# Pointer moves between a drag's press and its release (see _drag).
DRAG_MOVES = 8
# Our key names -> miniwob's PRESS_KEY syntax (printable characters stand for themselves).
_SPECIAL_KEYS = {
    "enter": "<Enter>",
    "tab": "<Tab>",
    "space": "<Space>",
    "backspace": "<Backspace>",
    "delete": "<Delete>",
    "escape": "<Escape>",
    "up": "<ArrowUp>",
    "down": "<ArrowDown>",
    "left": "<ArrowLeft>",
    "right": "<ArrowRight>",
    "home": "<Home>",
    "end": "<End>",
    "pageup": "<PageUp>",
    "pagedown": "<PageDown>",
    "insert": "<Insert>",
    "pause": "<Pause>",
    "ctrl": "<Control>",
    "shift": "<Shift>",
    "alt": "<Alt>",
    "win": "<Meta>",
    **{f"f{i}": f"<F{i}>" for i in range(1, 13)},
}
_MODIFIER_PREFIX = {"ctrl": "C-", "shift": "S-", "alt": "A-", "win": "M-"}


def miniwob_key(key: str, modifiers: tuple[str, ...] = ()) -> str:
    """One key (our name) with modifiers, in miniwob's PRESS_KEY syntax (``"C-a"``, ``"<Enter>"``)."""
    return "".join(_MODIFIER_PREFIX[m] for m in modifiers) + _SPECIAL_KEYS.get(key, key)


def reward_of(processor: str, metadata: dict[str, Any]) -> float:
    """The reward ``processor`` gives for miniwob's episode ``metadata`` (0 until it is done)."""
    from miniwob import reward

    fn = {
        "raw": reward.get_raw_reward,
        "binary": reward.get_binary_reward,
        "original": reward.get_original_reward,
    }[processor]
    return float(fn(metadata)) if metadata["done"] else 0.0


class MiniWoBEnv(RealGuiEnv):
    """One MiniWoB++ task (``task`` = its name, e.g. ``"click-test-2"``) in headless Chromium.

    Args:
        task: the miniwob task name (``flight.*`` tasks are served over a local HTTP server).
        reward_processor: ``"raw"``, ``"binary"`` or ``"original"`` (see the module doc).
        scale: screen pixels per CSS pixel (1 gives miniwob's 160×210; 2 gives 320×420).
        max_steps: step limit before truncation.
        chrome_binary / chromedriver: paths (else the env vars, else PATH).
        settle_ms: pause after each action before looking (animations, timers).
        data_mode: miniwob's ``"train"`` / ``"test"`` task generation mode.
    """

    BACKEND_NAME = "MiniWoB"
    # miniwob's actions press keys but cannot hold one; WebDriver has no code for these keys
    REFUSED_KINDS = ("key_down", "key_up")
    REFUSED_KEYS = ("capslock", "printscreen", "numlock", "scrolllock", "apps")

    expert_target_bbox: list[int] | None = None  # the box the last expert action aimed at
    # boxes as right as that one (the other boxes still to tick; MiniWoBOracle docs)
    expert_alternative_bboxes: tuple[list[int], ...] = ()
    expert_closes_run: int = 0  # the any-order steps (ticks) that action closes (a Submit)

    def __init__(
        self,
        task: str,
        reward_processor: str = "raw",
        scale: int = 1,
        max_steps: int = DEFAULT_MAX_STEPS,
        chrome_binary: str | None = None,
        chromedriver: str | None = None,
        settle_ms: float = 0.0,
        data_mode: str = "train",
        a11y_text: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if reward_processor not in REWARD_PROCESSORS:
            raise ValueError(
                f"reward_processor must be one of {', '.join(REWARD_PROCESSORS)}, got {reward_processor!r}"
            )
        if not (isinstance(scale, int) and 1 <= scale <= 4):
            raise ValueError(f"scale must be an integer in 1..4, got {scale!r}")
        self.task = task
        self.reward_processor = reward_processor
        self.scale = scale
        self.settle_ms = float(settle_ms)
        self.data_mode = data_mode
        # Resolve the programs first: a missing browser is a clear error before anything starts.
        self._chrome = find_chrome(chrome_binary)
        self._chromedriver = find_chromedriver(chromedriver)
        self._instance = None
        task_w, task_h = _task_size(task)
        super().__init__(
            (task_w * scale, task_h * scale),
            max_steps,
            a11y_text=a11y_text,
            render_mode=render_mode,
        )
        self._elements: list[dict[str, Any]] = []
        self._done_metadata: dict[str, Any] | None = None
        self._fields: list[list[str]] = []
        self._expert = None  # the oracle's plan for this episode, made on first use

    # -- browser ------------------------------------------------------------------------------
    def _start(self) -> None:
        from miniwob.selenium_instance import SeleniumInstance

        env = self

        class _Instance(SeleniumInstance):
            def create_driver(self) -> None:  # miniwob's, with our browser and flags
                from selenium.webdriver.common.by import By
                from selenium.webdriver.support import expected_conditions as EC
                from selenium.webdriver.support.wait import WebDriverWait

                self.driver = start_chrome(
                    env._chrome,
                    env._chromedriver,
                    (self.window_width + 100, self.window_height + 100),
                    device_scale_factor=env.scale,
                )
                self.driver.implicitly_wait(5)
                self.driver.get(self.url)
                WebDriverWait(self.driver, 10).until(
                    EC.element_to_be_clickable((By.ID, self.SYNC_SCREEN_ID))
                )
                self.inner_width, self.inner_height = self.driver.execute_script(
                    "return [window.innerWidth, window.innerHeight];"
                )

        instance = _Instance(index=0, subdomain=self.task, headless=True, data_mode=self.data_mode)
        instance.record_screenshots = False  # we take our own, at our scale
        self._instance = instance
        instance.create_driver()

    def _shutdown(self) -> None:
        if self._instance is not None:
            instance, self._instance = self._instance, None
            instance.died = True
            if hasattr(instance, "driver"):
                quit_chrome(instance.driver)

    @property
    def driver(self):
        """The selenium WebDriver (None before the first reset or after close)."""
        return getattr(self._instance, "driver", None)

    # -- episode ------------------------------------------------------------------------------
    def _begin(self, seed: int | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self._instance is None or self._instance.died:
            self._shutdown()
            self._start()
        # One page seed per episode, drawn from the env's generator: reset(seed=s) repeats.
        page_seed = int(self.np_random.integers(2**31 - 1))
        obs, infos = [{}], [{}]
        self._instance.reset(obs, infos, page_seed)
        self._done_metadata = None
        self._settle()
        # The observation's Text space holds TEXT_CHARSET only (miniwob utterances are ASCII).
        utterance = obs[0]["utterance"]
        instruction = "".join(c for c in utterance if c in TEXT_CHARSET)[:MAX_INSTRUCTION_LENGTH]
        fields = [list(f) for f in obs[0]["fields"]]
        self._fields, self._expert = fields, None
        return instruction, {"task": self.task, "fields": fields, "page_seed": page_seed}

    # -- the scripted expert ------------------------------------------------------------------
    def expert_action(self) -> Action:
        """The oracle's next action (:mod:`pixelrl.envs.web.oracle`), planned from the page as
        it is at the first call after reset (and again from the page as it is now at every call,
        for the tasks of :data:`~pixelrl.envs.web.oracle.REPLANNED`); ``done`` once the plan is
        spent. Raises :class:`~pixelrl.envs.web.oracle.OracleError` for a task the oracle does
        not know."""
        from pixelrl.envs.web.oracle import MiniWoBOracle

        if self._instruction is None:
            raise RuntimeError("call reset() before expert_action()")
        if self._expert is None:
            self._expert = MiniWoBOracle(self.task)
            seen = {"instruction": self._instruction, "screenshot": self._last_screenshot}
            self._expert.reset(seen, {"a11y": self._a11y(), "fields": self._fields})
        elif self._expert.replans:
            self._expert.observe({"a11y": self._a11y()}, self._last_screenshot)
        self.expert_target_bbox = self._expert.next_target_bbox
        self.expert_alternative_bboxes = tuple(self._expert.next_alternative_bboxes)
        self.expert_closes_run = self._expert.next_closes_run
        return self._expert.act()

    @property
    def expert_relabels(self) -> bool:
        """Whether :meth:`expert_action` is right on any page, also one a policy left (the
        tasks the oracle replans from each page; the others hand out a plan made at reset)."""
        from pixelrl.envs.web.oracle import REPLANNED

        return self.task in REPLANNED

    def expert_played(self, action: Action) -> None:
        """Tell the oracle what was played after its last :meth:`expert_action`
        (:meth:`~pixelrl.envs.web.oracle.MiniWoBOracle.played`: a policy's action, DAgger)."""
        if self._expert is not None:
            self._expert.played(action)

    def _check_supported(self, action: Action) -> None:
        super()._check_supported(action)
        # a wheel turn needs a point
        if action.kind == "scroll" and action.point is None:
            raise ActionError("the MiniWoB backend scrolls at a point: give the scroll x and y")
        if any(ord(c) > 0xFFFF for c in action.text):
            # ChromeDriver's send_keys takes the Basic Multilingual Plane only
            raise ActionError("the MiniWoB backend types no characters beyond U+FFFF (emoji)")

    def _act(self, action: Action) -> Outcome:
        from miniwob import selenium_actions as sa

        driver = self._instance.driver
        if self._metadata()["done"]:
            # The page ended the episode on its own (its time limit) since the last step.
            return self._finish(action)
        s = self.scale
        if action.point is not None:
            left, top = (math.floor((v + 0.5) / s) for v in action.point)
        if action.kind == "move":
            sa.execute_move_coords(left, top, driver)
        elif action.kind == "click":
            sa.execute_click_coords(left, top, driver)
        elif action.kind == "double_click":
            sa.execute_dblclick_coords(left, top, driver)
        elif action.kind == "right_click":
            chain = sa._get_move_coords_action_chains(left, top, driver)
            chain.w3c_actions.pointer_action.context_click()
            chain.w3c_actions.perform()
        elif action.kind == "drag":
            left2, top2 = (math.floor((v + 0.5) / s) for v in (action.x2, action.y2))
            _drag(driver, left, top, left2, top2)
        elif action.kind == "scroll":
            _scroll(driver, left, top, action.dx, action.dy)
        elif action.kind == "type":
            for kind, chunk in _split_text(action.text):
                if kind == "text":
                    sa.execute_type_text(chunk, driver)
                else:
                    sa.execute_press_key(miniwob_key(chunk), driver)
        elif action.kind == "key":
            sa.execute_press_key(miniwob_key(action.keys[0]), driver)
        elif action.kind == "hotkey":
            mods = tuple(k for k in action.keys if k in MODIFIER_KEYS)
            keys = [k for k in action.keys if k not in MODIFIER_KEYS]
            if not keys:  # modifiers alone ("ctrl+shift"): the last is pressed, the rest held
                mods, keys = mods[:-1], [mods[-1]]
            for key in keys:
                sa.execute_press_key(miniwob_key(key, mods), driver)
        elif action.kind == "wait":
            time.sleep(0.25)
        self._settle()
        return self._finish(action)

    def _finish(self, action: Action) -> Outcome:
        metadata = self._metadata()
        if not metadata["done"] and action.kind in ("done", "fail"):
            # Giving up, or claiming success before the page agrees: a failed episode.
            self._instance.force_stop()
            metadata = {**metadata, "done": True, "env_reward": -1.0, "raw_reward": -1.0}
        reward = reward_of(self.reward_processor, metadata)
        info = {"raw_reward": float(metadata["raw_reward"]) if metadata["done"] else 0.0}
        if metadata["done"]:
            info["reason"] = metadata.get("reason")
        success = bool(metadata["done"] and metadata["raw_reward"] >= 1.0)
        return Outcome(reward=reward, terminated=bool(metadata["done"]), success=success, info=info)

    def _metadata(self) -> dict[str, Any]:
        return self._instance.get_metadata()

    def _settle(self) -> None:
        if self.settle_ms:
            time.sleep(self.settle_ms / 1000.0)

    # -- looking ------------------------------------------------------------------------------
    def _screenshot(self) -> np.ndarray:
        from io import BytesIO

        from PIL import Image

        png = self._instance.driver.get_screenshot_as_png()
        image = Image.open(BytesIO(png)).convert("RGB")
        width, height = self.screen_size
        if image.width < width or image.height < height:
            raise RuntimeError(
                f"the browser viewport ({image.width}x{image.height}) is smaller than the task "
                f"area ({width}x{height})"
            )
        return np.asarray(image.crop((0, 0, width, height)), dtype=np.uint8).copy()

    def _a11y(self) -> list[dict[str, Any]]:
        """miniwob's DOM elements (leaves and containers) with pixel bboxes on our screenshot."""
        from miniwob.dom import DOMElement

        root = DOMElement(self._instance.driver.execute_script("return core.getDOMInfo();"))
        # Ids are positions in a depth-first walk of the page (root = 0), not miniwob's "ref"
        # numbers: those come from a counter that runs on across episodes and page rebuilds, so
        # the same seed and actions would not give the same ids.
        nodes = list(_walk(root))
        index = {id(e): i for i, e in enumerate(nodes)}
        width, height = self.screen_size
        s = self.scale
        elements = []
        for e in nodes[1:]:
            x0 = max(0, math.floor(e.left * s))
            y0 = max(0, math.floor(e.top * s))
            x1 = min(width, math.ceil((e.left + e.width) * s))
            y1 = min(height, math.ceil((e.top + e.height) * s))
            if x1 <= x0 or y1 <= y0:
                continue  # outside the task area
            parent = index.get(id(e.parent), 0) if e.parent is not None else 0
            state: dict[str, Any] = {"tag": e.tag, "parent": parent}
            if e.value is not None:
                state["value"] = e.value
            if e.id:
                state["html_id"] = e.id
            if e.classes:
                state["classes"] = e.classes
            if e.tampered:
                state["tampered"] = True
            name = (e.text or "").strip()
            elements.append(
                a11y_element(
                    index[id(e)], _role(e.tag), name, [x0, y0, x1, y1], state, focused=e.focused
                )
            )
        return elements


def _walk(root):
    """Every node below and including ``root`` (a miniwob DOMElement), depth first."""
    stack = [root]
    while stack:
        e = stack.pop()
        stack.extend(reversed(e.children))
        yield e


def _task_size(task: str) -> tuple[int, int]:
    from miniwob import constants

    if task.startswith("flight."):
        return constants.FLIGHT_TASK_WIDTH, constants.FLIGHT_TASK_HEIGHT
    return constants.TASK_WIDTH, constants.TASK_HEIGHT


_ROLES = {
    "button": "button",
    "input_button": "button",
    "input_submit": "button",
    "input_text": "textbox",
    "input_password": "textbox",
    "input_number": "textbox",
    "input_email": "textbox",
    "textarea": "textbox",
    "input_checkbox": "checkbox",
    "input_radio": "radio",
    "select": "combobox",
    "option": "option",
    "a": "link",
    "t": "text",
    "label": "label",
    "span": "text",
    "svg": "graphic",
    "canvas": "graphic",
}


def _role(tag: str) -> str:
    """An ARIA-like role for a miniwob tag (``input_text`` → ``textbox``), else the tag."""
    return _ROLES.get(tag, tag)


def _split_text(text: str) -> list[tuple[str, str]]:
    """Typed text as runs of characters and the keys \\n (Enter) and \\t (Tab)."""
    parts: list[tuple[str, str]] = []
    run = ""
    for ch in text:
        if ch in "\n\t":
            if run:
                parts.append(("text", run))
                run = ""
            parts.append(("key", "enter" if ch == "\n" else "tab"))
        else:
            run += ch
    if run:
        parts.append(("text", run))
    return parts


def _drag(driver, left: int, top: int, left2: int, top2: int) -> None:
    """Press at (left, top), move to (left2, top2) in :data:`DRAG_MOVES` steps, release: one
    pointer gesture. Widgets need the moves between: jQuery UI starts a drag only after the
    pointer has moved while pressed, and a sortable list reorders as the item passes the others."""
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver, duration=0)
    pointer = chain.w3c_actions.pointer_action
    pointer.move_to_location(left, top)
    pointer.pointer_down()
    for i in range(1, DRAG_MOVES + 1):
        pointer.move_to_location(
            round(left + (left2 - left) * i / DRAG_MOVES),
            round(top + (top2 - top) * i / DRAG_MOVES),
        )
    pointer.pointer_up()
    chain.w3c_actions.perform()


def _scroll(driver, left: int, top: int, dx: int, dy: int) -> None:
    """Turn the wheel at (left, top): ``dy``/``dx`` notches of miniwob's scroll amount."""
    from miniwob.constants import DEFAULT_SCROLL_AMOUNT, DEFAULT_SCROLL_TIME
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    chain.w3c_actions.wheel_action.scroll(
        x=int(left),
        y=int(top),
        delta_x=int(dx) * DEFAULT_SCROLL_AMOUNT,
        delta_y=int(dy) * DEFAULT_SCROLL_AMOUNT,
        duration=DEFAULT_SCROLL_TIME,
    )
    chain.w3c_actions.perform()
