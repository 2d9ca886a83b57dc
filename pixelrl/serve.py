"""Any registered pixelrl env behind an OpenEnv server (``openenv-core``): ``pixelrl serve ENV_ID``.

One idea: a :class:`GymEnvironment` adapts one ``gymnasium`` env of ours to OpenEnv's
``Environment`` (reset / step / state with pydantic Action and Observation types), and
:func:`build_app` hands it to OpenEnv's own ``create_fastapi_app``. OpenEnv's protocol decides the
rest:

- **Sessions.** OpenEnv's clients (``EnvClient``, ``GenericEnvClient``) hold a WebSocket at
  ``/ws``; the server builds one environment per connection (at its first reset), so every client
  has its own gym env (its own seed, episode and state) and nothing is shared between them. The
  HTTP ``/reset`` and ``/step`` routes are stateless in OpenEnv (a fresh env per request, closed
  after it): an HTTP ``/step`` has no episode and is refused (422), so episodes go through the
  WebSocket. OpenEnv's ``/mcp`` routes are not served (the envs have no MCP tools).
- **Limits.** At most ``max_sessions`` envs live at once, WebSocket sessions and HTTP resets
  together (:class:`EnvSlots`): past it a WebSocket connection gets OpenEnv's
  ``CAPACITY_REACHED``, a reset :class:`ServerBusy` (HTTP 503), unless an env is closing (then
  the reset waits for its slot). Envs are built and closed on worker threads, never on the event
  loop, so a slow env stalls no other client. A WebSocket that sends nothing for
  ``idle_timeout_s`` (default 300 s) is closed with its env. A request from a web page (it
  carries ``Origin``) is refused unless the page is on loopback or its origin is allowed
  (:mod:`pixelrl.serve_guards`).
- **Observations** are the env's observation dict, one field per key, JSON-safe. uint8 images
  (``screenshot``, ``rgb``) are base64 PNG strings by default (lossless, so pixels stay exact;
  :func:`decode_image`, or ``PIL.Image.open``, reads them back), depth the float32 bytes in
  base64 with dtype and shape: OpenEnv's protocol has no image
  type, and its image envs send nested lists (BrowserGym's ``screenshot``), which at 320x240
  cost ~0.2-0.5 s a step to build and parse here against ~2 ms for PNG (a 1280x800 screen is
  ~10 MB of JSON). ``images="lists"`` sends nested lists ``[row][column][channel]`` for clients
  written for that convention (``np.asarray(obs["screenshot"], np.uint8)``), depth included.
  Other arrays (a point goal) are lists. Plus ``terminated`` / ``truncated`` (OpenEnv's ``done`` is their
  *or*) and ``info``: the verifiable measures only (``success``, ``spl``, ...; :data:`VERIFIABLE`).
  OpenEnv's serializer drops ``Observation.metadata`` on the wire, so they travel as a field;
  privileged facts (accessibility tree, target boxes, the task's answer) never leave the server.
- **Actions.** GUI envs: ``{"action_text": "pyautogui.click(x=10, y=20)"}`` (pyautogui or UI-TARS
  text, parsed by the env's whitelist, never executed) or the fields of
  :class:`pixelrl.envs.gui_action.Action` (``{"kind": "click", "x": 10, "y": 20}``). Navigation envs:
  ``{"action": 0..3}`` (stop, move_forward, turn_left, turn_right) or the action's name.
- **Bad requests** (an unknown field or action, an action the env refuses, a step before reset or
  after the episode ended, a bad seed, no env left) raise :class:`ServeError`: an error message on
  the WebSocket (OpenEnv's ``{"type": "error"}``, the session goes on), HTTP 422 on the HTTP
  routes (503 for :class:`ServerBusy`).
  Request bodies and WebSocket messages are capped at :data:`MAX_REQUEST_BYTES`.

The server listens on loopback unless the caller asks for another address
(``pixelrl serve --host 0.0.0.0 --allow-remote``): it has no authentication.
"""

from __future__ import annotations

import base64
import functools
import io
import ipaddress
import logging
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import gymnasium
import numpy as np

from pixelrl.envs.nav.measures import habitat_keys
from pixelrl.seeds import checked_seed
from pixelrl.serve_guards import (
    DEFAULT_IDLE_TIMEOUT_S,
    BodyLimit,
    CloseIdleWebSockets,
    QuietDisconnects,
    RefuseForeignHosts,
    RefuseForeignOrigins,
    SayWhyInvalid,
)

# The navigation measures under habitat's keys (soft_spl), then whether the env faulted.
VERIFIABLE = (*habitat_keys(), "env_fault")
IMAGE_ENCODINGS = ("png", "lists")
MAX_REQUEST_BYTES = 1 << 20  # an action is a few hundred bytes; text actions hold <= 8192 chars
RESERVED = ("done", "reward", "metadata", "terminated", "truncated", "info")


class ServeError(ValueError):
    """A client's request the env cannot take; the server answers with an error and goes on."""


class ServerBusy(ServeError):
    """Every env the server may run is running (``--max-sessions``): HTTP 503, a WebSocket error;
    the client may try again when a session ends."""


# -- the env, as OpenEnv sees it ----------------------------------------------------------------
@dataclass(frozen=True)
class EnvSpec:
    """What a session needs to build its own env and speak for it."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    kind: Literal["gui", "nav"] = "gui"
    images: str = "png"
    action_cls: type = None  # type: ignore[assignment]
    observation_cls: type = None  # type: ignore[assignment]

    def make(self) -> gymnasium.Env:
        import pixelrl.envs  # noqa: F401  (registers the ids)

        return gymnasium.make(self.env_id, **self.env_kwargs)


class EnvSlots:
    """The server's one cap on live envs, shared by WebSocket sessions and HTTP requests.

    :meth:`build` takes a slot and builds the env; :meth:`close` closes an env on a thread of its
    own and gives the slot back once the env is gone. A thread of its own because OpenEnv closes
    an HTTP request's env on its event loop, and an X server takes about a second to stop. With
    every slot taken, a build waits for envs that are closing (up to ``close_wait_s``), so the
    client after one that left is served; with none closing it is :class:`ServerBusy` at once."""

    def __init__(self, limit: int, close_wait_s: float = 10.0) -> None:
        self.limit, self.close_wait_s = limit, close_wait_s
        self._used = 0  # envs built or being built, closing ones included
        self._closing = 0
        self._changed = threading.Condition()
        # at most `limit` envs exist, so at most `limit` closes at once; its threads are joined at
        # exit, so no X server or browser outlives the server
        self._closer = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="close-env")

    def build(self, spec: EnvSpec) -> gymnasium.Env:
        with self._changed:
            self._changed.wait_for(
                lambda: self._used < self.limit or not self._closing, self.close_wait_s
            )
            if self._used >= self.limit:
                raise ServerBusy(
                    f"busy: all {self.limit} envs this server may run are in use "
                    f"(--max-sessions {self.limit}); try again when a session ends"
                )
            self._used += 1
        try:
            return spec.make()
        except BaseException:
            self._give_back()
            raise

    def close(self, env: gymnasium.Env) -> None:
        with self._changed:
            self._closing += 1
        try:
            self._closer.submit(self._close, env)
        except RuntimeError:  # the interpreter is exiting: no new threads
            self._close(env)

    def _close(self, env: gymnasium.Env) -> None:
        try:
            env.close()
        except Exception as e:  # noqa: BLE001  (the env is gone either way; the server goes on)
            logging.getLogger(__name__).warning("closing an env failed: %s", e)
        finally:
            self._give_back(closed=True)

    def _give_back(self, closed: bool = False) -> None:
        with self._changed:
            self._used -= 1
            self._closing -= closed
            self._changed.notify_all()


def _environment_base():
    from openenv.core.env_server.interfaces import Environment

    return Environment


class GymEnvironment(_environment_base()):
    """One session's env: a fresh ``gymnasium.make(spec.env_id)`` per OpenEnv session, built at
    its first reset.

    Built late because OpenEnv calls this factory on its event loop for an HTTP request (and for
    ``/state``, ``/metadata`` and a ``/step`` it refuses); its reset runs on a worker thread.
    Built through :class:`EnvSlots`, so HTTP requests and WebSocket sessions share one cap."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its env; nothing is shared

    def __init__(self, spec: EnvSpec, slots: EnvSlots) -> None:
        super().__init__()
        from openenv.core.env_server.types import State

        self.spec, self.slots = spec, slots
        self.env: gymnasium.Env | None = None
        self._state = State(episode_id=None, step_count=0)
        self._started = False
        self._over = False

    def reset(self, seed: int | None = None, episode_id: str | None = None):
        from openenv.core.env_server.types import State

        seed = checked_seed(seed, ServeError)
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise ServeError("episode_id must be a string of at most 255 characters")
        if self.env is None:
            self.env = self.slots.build(self.spec)
        obs, info = self.env.reset(seed=seed)
        self._state = State(
            episode_id=episode_id or uuid.uuid4().hex,
            step_count=0,
            env_id=self.spec.env_id,
            seed=seed,
            done=False,
        )
        self._started, self._over = True, False
        return self._observation(obs, info, None, False, False)

    def step(self, action, timeout_s: float | None = None, **kwargs: Any):
        from pixelrl.envs.gui_action import ActionError

        if not self._started:
            raise ServeError(
                "no episode: reset first (OpenEnv's HTTP /step gets a fresh env per request; "
                "play episodes over the WebSocket, e.g. with GenericEnvClient)"
            )
        if self._over:
            raise ServeError("the episode is over (done): reset to start another")
        native = _native_action(action, self.spec.kind)
        try:
            obs, reward, terminated, truncated, info = self.env.step(native)
        except ActionError as e:  # the env changed nothing; the episode goes on
            raise ServeError(f"invalid action: {' '.join(str(e).split())}") from None
        self._over = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = self._over
        return self._observation(obs, info, float(reward), bool(terminated), bool(truncated))

    @property
    def state(self):
        return self._state

    def get_metadata(self):
        from openenv.core.env_server.types import EnvironmentMetadata

        from pixelrl import __version__
        from pixelrl.envs.registry import DESCRIPTIONS

        return EnvironmentMetadata(
            name=self.spec.env_id,
            description=DESCRIPTIONS.get(self.spec.env_id, self.spec.env_id),
            version=__version__,
        )

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            self.slots.close(env)

    def _observation(self, obs, info, reward, terminated, truncated):
        fields = {k: encode(v, self.spec.images) for k, v in obs.items()}
        measures = verifiable(info)
        # model_construct: the values are ours and JSON-safe already; validating a 1280x800x3
        # nested list would cost more than encoding it
        return self.spec.observation_cls.model_construct(
            **fields,
            terminated=terminated,
            truncated=truncated,
            info=measures,
            done=terminated or truncated,
            reward=reward,
            metadata=dict(measures),
        )


def _native_action(action, kind: str):
    """The pydantic action as the gym env's ``step`` takes it."""
    if kind == "nav":
        return action.action
    if action.action_text is not None:
        return action.action_text  # parsed by the env's whitelist (ast), never executed
    from pixelrl.envs.gui_action import Action, ActionError

    try:
        return Action(
            kind=action.kind,
            x=action.x,
            y=action.y,
            x2=action.x2,
            y2=action.y2,
            dx=action.dx,
            dy=action.dy,
            text=action.text,
            keys=tuple(action.keys),
        )
    except ActionError as e:
        raise ServeError(f"invalid action: {' '.join(str(e).split())}") from None


# -- JSON-safe values ---------------------------------------------------------------------------
def encode(value: Any, images: str = "png") -> Any:
    """An observation value as JSON: arrays as nested lists, or with ``images="png"`` a uint8
    H×W×{1,3} image as a base64 PNG string and a float H×W×C image (depth) as
    ``{"dtype": "float32", "shape": [H, W, C], "data": base64 of the little-endian bytes}``
    (exact; nested lists of floats cost OpenEnv's serializer ~12 ms a 64x64 depth frame)."""
    if isinstance(value, np.ndarray):
        if images == "png" and is_image(value):
            return png_base64(value)
        if images == "png" and value.dtype.kind == "f" and value.ndim == 3:
            raw = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
            data = base64.b64encode(raw.tobytes()).decode("ascii")
            return {"dtype": value.dtype.name, "shape": list(value.shape), "data": data}
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def is_image(value: np.ndarray) -> bool:
    return value.dtype == np.uint8 and value.ndim == 3 and value.shape[2] in (1, 3)


def png_base64(image: np.ndarray) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image).save(
        buffer, format="PNG", compress_level=1
    )
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_image(value: Any) -> np.ndarray:
    """An ``images="png"`` image back as an H×W×C array (for clients): a PNG string (uint8) or
    a float image's dict; nested lists go through ``np.asarray``."""
    if isinstance(value, str):
        from PIL import Image

        image = np.asarray(Image.open(io.BytesIO(base64.b64decode(value))))
        return image[:, :, None] if image.ndim == 2 else image
    if isinstance(value, dict):
        dtype = np.dtype(value["dtype"]).newbyteorder("<")
        return np.frombuffer(base64.b64decode(value["data"]), dtype).reshape(value["shape"])
    return np.asarray(value)


def verifiable(info: dict[str, Any]) -> dict[str, Any]:
    """The info's verifiable measures as JSON scalars (nothing privileged)."""
    out = {}
    for key in VERIFIABLE:
        value = info.get(key)
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, (bool, int, float, str)):
            out[key] = value
    return out


# -- the pydantic types OpenEnv validates and documents (/schema) -------------------------------
def env_kind(env: gymnasium.Env) -> str:
    """``"gui"`` (screenshot + instruction, GUI actions) or ``"nav"`` (a ``Discrete`` action)."""
    spaces = getattr(env.observation_space, "spaces", {})
    if "screenshot" in spaces:
        return "gui"
    if isinstance(env.action_space, gymnasium.spaces.Discrete):
        return "nav"
    raise ServeError(
        f"no OpenEnv adapter for {env.spec.id if env.spec else env}: "
        "serves GUI envs (screenshot) and navigation envs (Discrete actions)"
    )


def action_model(kind: str, num_actions: int = 4) -> type:
    from openenv.core.env_server.types import Action
    from pydantic import Field, StrictInt, StrictStr, model_validator
    from pydantic_core import PydanticCustomError

    from pixelrl.envs.gui_action import KINDS

    if kind == "nav":

        class NavAction(Action):
            """An index (0 stop, 1 move_forward, 2 turn_left, 3 turn_right) or its name."""

            action: StrictInt | Annotated[StrictStr, Field(max_length=64)] = Field(
                description=f"0..{num_actions - 1} or the action's name"
            )

        return NavAction

    class GuiAction(Action):
        """Action text (pyautogui or UI-TARS), or the fields of pixelrl's GUI ``Action``."""

        action_text: StrictStr | None = Field(
            default=None,
            max_length=16384,
            description="pyautogui or UI-TARS text, e.g. pyautogui.click(x=10, y=20); parsed "
            "with a whitelist, never executed",
        )
        kind: Literal[KINDS] | None = Field(default=None, description="with the fields below")  # type: ignore[valid-type]
        x: StrictInt | None = None
        y: StrictInt | None = None
        x2: StrictInt | None = None
        y2: StrictInt | None = None
        dx: StrictInt = 0
        dy: StrictInt = 0
        text: StrictStr = Field(default="", max_length=16384)
        keys: list[StrictStr] = Field(default_factory=list, max_length=16)

        @model_validator(mode="after")
        def _one_form(self):
            if (self.action_text is None) == (self.kind is None):
                # not ValueError: OpenEnv 0.3 puts the exception object in its error reply, cannot
                # encode it, and ends the session; a custom error carries only text
                raise PydanticCustomError(
                    "one_form", "give either action_text or kind (with its fields), not both"
                )
            return self

    return GuiAction


def observation_model(space: gymnasium.spaces.Dict, images: str) -> type:
    from openenv.core.env_server.types import Observation
    from pydantic import Field, create_model

    fields: dict[str, Any] = {}
    for key, sub in space.spaces.items():
        if key in RESERVED:
            raise ServeError(f"observation key {key!r} clashes with OpenEnv's fields")
        fields[key] = (Any, Field(default=None, description=_describe(sub, images)))
    fields["terminated"] = (bool, Field(default=False, description="the episode ended (task)"))
    fields["truncated"] = (bool, Field(default=False, description="the step limit ended it"))
    fields["info"] = (
        dict[str, Any],
        Field(default_factory=dict, description=f"verifiable measures: {', '.join(VERIFIABLE)}"),
    )
    return create_model("PixelrlObservation", __base__=Observation, **fields)


def _describe(space: gymnasium.Space, images: str) -> str:
    if isinstance(space, gymnasium.spaces.Box):
        shape = "x".join(str(s) for s in space.shape)
        if images == "png" and space.dtype == np.uint8 and len(space.shape) == 3:
            return f"{shape} uint8 image as a base64 PNG"
        if images == "png" and space.dtype.kind == "f" and len(space.shape) == 3:
            return f"{shape} {space.dtype} image as {{dtype, shape, data: base64 bytes}}"
        return f"{shape} {space.dtype} as nested lists"
    return type(space).__name__


# -- the app ------------------------------------------------------------------------------------
def make_spec(
    env_id: str, env_kwargs: dict[str, Any] | None = None, images: str = "png"
) -> EnvSpec:
    """Builds the env once to learn its kind and spaces (and to fail early on bad options)."""
    if images not in IMAGE_ENCODINGS:
        raise ServeError(f"images must be one of {', '.join(IMAGE_ENCODINGS)}, got {images!r}")
    probe = EnvSpec(env_id, dict(env_kwargs or {})).make()
    try:
        kind = env_kind(probe)
        num_actions = probe.action_space.n if kind == "nav" else 0
        observation_cls = observation_model(probe.observation_space, images)
    finally:
        probe.close()
    return EnvSpec(
        env_id,
        dict(env_kwargs or {}),
        kind,
        images,
        action_model(kind, num_actions),
        observation_cls,
    )


def build_app(
    spec: EnvSpec,
    max_sessions: int = 16,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    allowed_origins: tuple[str, ...] = (),
    loopback_only: bool = True,
):
    """OpenEnv's FastAPI app for ``spec``: ``/ws`` sessions (one env each), ``/reset``,
    ``/step``, ``/state``, ``/schema``, ``/health``; behind the guards of
    :mod:`pixelrl.serve_guards`.

    At most ``max_sessions`` envs live at once, WebSocket sessions and HTTP requests together
    (past it: :class:`ServerBusy`); a WebSocket silent for ``idle_timeout_s`` is closed; a browser
    page's request is refused unless the page is on loopback or in ``allowed_origins``; with
    ``loopback_only`` (a server that listens on loopback) a ``Host`` other than loopback is too."""
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import create_fastapi_app

    slots = EnvSlots(max_sessions)
    factory = functools.partial(GymEnvironment, spec, slots)
    # OpenEnv's own session_timeout is not used: its reaper closes the env but leaves the
    # WebSocket open (the client's next step meets a closed env), and it looks every >= 5 s
    app = create_fastapi_app(
        factory, spec.action_cls, spec.observation_cls, max_concurrent_envs=max_sessions
    )
    # Our envs speak no MCP, and OpenEnv's /mcp routes open sessions that nothing closes (two
    # POSTs of "openenv/session/create" held both sessions of a --max-sessions 2 server for good)
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/mcp"]

    async def refuse(request, error: ServeError):
        return JSONResponse(status_code=422, content={"detail": str(error)})

    async def busy(request, error: ServerBusy):
        return JSONResponse(
            status_code=503, content={"detail": str(error)}, headers={"Retry-After": "1"}
        )

    app.add_exception_handler(ServeError, refuse)
    app.add_exception_handler(ServerBusy, busy)
    guarded = CloseIdleWebSockets(SayWhyInvalid(app), idle_timeout_s)
    guarded = QuietDisconnects(guarded)  # outside the idle guard: real departures only
    guarded = BodyLimit(guarded, MAX_REQUEST_BYTES)
    guarded = RefuseForeignOrigins(guarded, allowed_origins)
    return RefuseForeignHosts(guarded) if loopback_only else guarded


# -- listening ----------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(
        ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos
    )


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket (port 0: a free one); ``OSError`` if the address is taken."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def server(app, sock: socket.socket, log_level: str = "warning"):
    """A uvicorn server for ``app`` on ``sock`` (WebSocket messages capped): its
    ``.run(sockets=[sock])`` serves until interrupted or until ``should_exit`` is set."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, ws_max_size=MAX_REQUEST_BYTES
    )
    return uvicorn.Server(config)


def run_server(app, sock: socket.socket, log_level: str = "warning") -> None:
    """Serves ``app`` on ``sock`` until interrupted."""
    server(app, sock, log_level).run(sockets=[sock])
