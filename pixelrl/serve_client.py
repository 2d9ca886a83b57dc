"""The client side of ``pixelrl serve``: an env behind the server, played like a gym env.

:class:`RemoteEnv` holds one OpenEnv WebSocket session (:class:`PixelrlEnv`, an OpenEnv
``EnvClient``, so one gym env of its own on the server) and answers ``reset`` / ``step`` / ``close`` as
``gymnasium.make(env_id)`` would in this process: the observation dict with its images decoded
back to the same arrays (PNG is lossless), ``info`` with the verifiable measures the server
sends (``success``, ``spl``, ``distance_to_goal``, ``num_steps``, ...; privileged facts never
leave the server). So code written against a local env (the TRL environments of
:mod:`pixelrl.trl_env`) plays a remote one unchanged::

    env = RemoteEnv("http://gpu-box:8000", "pixelrl/Desktop-ClickButton-v0")
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(Action.click(40, 60))

An action the env refuses comes back as the server's one-line reason in a ``ValueError`` (as a
local env's ``ActionError``); a server that is gone or full is a ``ConnectionError``.

For OpenEnv's users the same session is a typed client, as OpenEnv's env templates write one
(``client.py`` + ``models.py``): :class:`PixelrlEnv` (an ``EnvClient``) takes :class:`GuiAction`
or :class:`NavAction` (the server's own pydantic action models) and returns
:class:`PixelrlObservation` (the env's observation dict, decoded, with ``terminated``,
``truncated`` and the verifiable ``info``)::

    with PixelrlEnv(base_url="http://localhost:8000").sync() as env:
        result = env.reset(seed=3)
        result = env.step(GuiAction(kind="click", x=40, y=60))
        result.observation.fields["screenshot"]      # H x W x 3 uint8
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Observation, State
from pydantic import Field

from pixelrl.envs.gui_action import Action
from pixelrl.serve import action_model, decode_image

# The server's action models, as classes a client imports (OpenEnv's models.py)
GuiAction = action_model("gui")
NavAction = action_model("nav")

# The server's one-line reasons for an action its env refused (pixelrl.serve.GymEnvironment.step
# and _native_action): the local env would have raised ActionError, a ValueError
REFUSED = ("invalid action:", "the episode is over")


def decode_observation(fields: dict[str, Any]) -> dict[str, Any]:
    """A served observation's fields back as the env's own values: images (a base64 PNG, a
    depth dict, or nested lists of pixels) as arrays, other lists as float arrays, text as it is.
    The server's extra fields (``terminated``, ``truncated``, ``info``) are left out."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("terminated", "truncated", "info"):
            continue
        if isinstance(value, str) and value.startswith("iVBORw0KGgo"):  # base64 of PNG's magic
            out[key] = decode_image(value)
        elif isinstance(value, dict) and {"dtype", "shape", "data"} <= set(value):
            out[key] = decode_image(value)
        elif isinstance(value, list):
            array = np.asarray(value)
            # an --images lists screen: integers in 0..255, three axes
            image = array.ndim == 3 and array.dtype.kind in "iu"
            out[key] = array.astype(np.uint8) if image else array.astype(np.float32)
        else:
            out[key] = value
    return out


def action_payload(action: Any) -> dict[str, Any]:
    """An action as the server's action model takes it: a GUI :class:`Action` by its fields,
    action text as ``action_text``, a navigation index as ``action``."""
    if isinstance(action, Action):
        return {"kind": action.kind, "x": action.x, "y": action.y, "x2": action.x2,
                "y2": action.y2, "dx": action.dx, "dy": action.dy, "text": action.text,
                "keys": list(action.keys)}  # fmt: skip
    if isinstance(action, str):
        return {"action_text": action}
    return {"action": int(action)}


class PixelrlObservation(Observation):
    """One served observation: ``fields``, the env's observation dict (images as arrays, text
    as text), plus OpenEnv's ``done`` and ``reward`` and the episode's end and measures."""

    fields: dict[str, Any] = Field(default_factory=dict, description="the env's observation")
    terminated: bool = Field(default=False, description="the episode ended (task)")
    truncated: bool = Field(default=False, description="the step limit ended it")
    info: dict[str, Any] = Field(default_factory=dict, description="verifiable measures")


class PixelrlEnv(EnvClient[Any, PixelrlObservation, State]):
    """OpenEnv's typed client of ``pixelrl serve`` (``EnvClient``: async, ``.sync()`` for a
    blocking one): actions are :class:`GuiAction`, :class:`NavAction`, a GUI :class:`Action`,
    action text or a navigation index; observations :class:`PixelrlObservation`."""

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, (GuiAction, NavAction)):
            return action.model_dump(exclude_unset=True)  # the server fills its defaults
        return action_payload(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[PixelrlObservation]:
        fields = payload.get("observation", {})
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = PixelrlObservation(
            fields=decode_observation(fields), terminated=bool(fields.get("terminated")),
            truncated=bool(fields.get("truncated")), info=dict(fields.get("info", {})),
            done=done, reward=reward,
        )  # fmt: skip
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class RemoteEnv:
    """One env behind ``pixelrl serve`` at ``url`` (``http://host:port``), with a gym env's
    ``reset``, ``step`` and ``close``.

    ``env_id`` is what the server must serve (checked at the first reset, against its
    ``/metadata``); ``env_kwargs`` are the server's ``--env-kwargs``. They build, only when a
    caller reads the env's configuration (``spec``, ``unwrapped``: the navigation tools read the
    step limit), a local twin that is never stepped, so those reads answer as the server's env."""

    def __init__(self, url: str, env_id: str, message_timeout_s: float = 120.0, **env_kwargs: Any):
        if not isinstance(url, str) or not url.startswith(
            ("http://", "https://", "ws://", "wss://")
        ):
            raise ValueError(f"url must be http://host:port (pixelrl serve's address), got {url!r}")
        self.url, self.env_id, self.env_kwargs = url.rstrip("/"), env_id, env_kwargs
        self._client = PixelrlEnv(base_url=self.url, message_timeout_s=message_timeout_s).sync()
        self._checked = False
        self._twin: gymnasium.Env | None = None

    def reset(self, seed: int | None = None, **_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if not self._checked:
            self._check_served()
        observation = self._call(self._client.reset, seed=seed).observation
        return observation.fields, observation.info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        result = self._call(self._client.step, action)
        o = result.observation
        return o.fields, float(result.reward or 0.0), o.terminated, o.truncated, o.info

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        twin, self._twin = self._twin, None
        if twin is not None:
            twin.close()

    @property
    def spec(self):
        return self._local_twin().spec

    @property
    def unwrapped(self):
        return self._local_twin().unwrapped

    # -- helpers --------------------------------------------------------------------------------
    def _local_twin(self) -> gymnasium.Env:
        if self._twin is None:
            self._twin = gymnasium.make(self.env_id, **self.env_kwargs)
        return self._twin

    def _check_served(self) -> None:
        import json
        import urllib.request

        http = self.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)
        try:
            with urllib.request.urlopen(f"{http}/metadata", timeout=30) as response:
                served = json.loads(response.read()).get("name")
        except OSError as e:
            raise ConnectionError(f"no pixelrl serve at {self.url}: {e}") from None
        if served != self.env_id:
            raise ValueError(f"the server at {self.url} serves {served!r}, not {self.env_id!r}")
        self._checked = True

    def _call(self, method, *args: Any, **kwargs: Any):
        try:
            return method(*args, **kwargs)
        except RuntimeError as e:  # OpenEnv's client: "Server error: <reason> (code: ...)"
            reason = str(e).removeprefix("Server error: ").rsplit(" (code:", 1)[0]
            if reason.startswith(REFUSED):  # the env's own words, as a local env says them
                raise ValueError(reason.removeprefix("invalid action: ")) from None
            raise ConnectionError(f"{self.url}: {reason}") from None
        except OSError as e:
            raise ConnectionError(f"{self.url}: {e}") from None
