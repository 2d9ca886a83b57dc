"""Recording, replaying, viewing and loading episodes (demonstrations), one on-disk format.

    env = RecordEpisodes(gymnasium.make("pixelrl/Desktop-ClickButton-v0"), "demos/")
    ...play episodes...
    data = EpisodeDataset("demos/")                 # validated; problems reported, rest loads
    replay_dataset("demos/")                        # exact-frame fidelity per episode
    view_episode("demos/", 0, "ep0.gif")            # actions drawn on the frames

Modules: ``format`` (layout, meta files, atomic writes), ``codec`` (what is stored for an
observation, action, info), ``writer`` (crash-safe episode writing), ``wrapper`` (the Gymnasium
wrappers), ``dataset`` (loading and validation: a folder is data from anyone, read within the
limits of ``format``), ``env_options`` (which env options a recording may choose), ``replay``,
``view``, ``training`` (torch and ``datasets`` loaders; imports torch), ``human`` (a person's
actions on an X display) with ``device_input`` (XInput2 input of the display's devices only),
``interop`` (LeRobot v3 export, OSWorld import).
"""

from pixelrl.envs.recording.dataset import EpisodeDataset, load_episodes
from pixelrl.envs.recording.format import SCHEMA_VERSION, DatasetError, EpisodeProblem
from pixelrl.envs.recording.replay import EpisodeFidelity, fidelity_table, replay_dataset
from pixelrl.envs.recording.view import view_episode
from pixelrl.envs.recording.wrapper import (
    RecordEpisodes,
    RecordVectorEpisodes,
    SeedEachEpisode,
    make_recording_vector_env,
)

__all__ = [
    "SCHEMA_VERSION",
    "DatasetError",
    "EpisodeDataset",
    "EpisodeFidelity",
    "EpisodeProblem",
    "RecordEpisodes",
    "RecordVectorEpisodes",
    "SeedEachEpisode",
    "fidelity_table",
    "load_episodes",
    "make_recording_vector_env",
    "replay_dataset",
    "view_episode",
]
