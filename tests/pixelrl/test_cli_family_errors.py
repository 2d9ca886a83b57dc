"""The ``env.family`` key's mistakes on the command line (issue 52): one line ``pixelrl train:
error: ...`` naming the key and its replacement, exit status 2, no traceback, nothing written.

``env.tasks`` used to mean MiniWoB++ task names; a config with tasks and no family now says to
add ``env.family=miniwob``. One saved before the key (``env.id: miniwob`` beside ``env.tasks``)
reads ``env.id`` as the family, so old runs still evaluate and resume.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

# (id, argv after `pixelrl train`, text the error line must hold)
CASES = [
    ("tasks-without-family", ["gui/miniwob", "env.family=", "env.id=pixelrl/MiniWoB-click-tab-v0",
                              "env.tasks=[click-tab]"],
     "env.tasks: name the task family they belong to with env.family (env.family=miniwob"),
    ("text-tasks-without-family", ["gui/miniwob-vlm-sft", "env.family="],
     "env.tasks: name the task family they belong to with env.family (env.family=miniwob"),
    ("unknown-family", ["gui/miniwob", "env.family=miniwbo"],
     "env.family: unknown task family 'miniwbo'; did you mean miniwob?"),
    ("unknown-task", ["gui/miniwob-vlm-sft", "env.tasks=[click-buton]"],
     "env.tasks: 'click-buton': unknown env id 'pixelrl/MiniWoB-click-buton-v0'; did you mean"),
    ("family-ignored", ["embodied/pointnav-small", "env.family=miniwob"],
     "recipe 'embodied/pointnav-small' trains on one env (env.id) and would ignore env.tasks and env.family"),
]  # fmt: skip


def _run(case, cwd) -> dict:
    name, argv, _ = case
    folder = cwd / name
    folder.mkdir()
    command = [sys.executable, "-m", "pixelrl", "train", *argv, "train.output_dir=run"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    p = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    return {"rc": p.returncode, "err": p.stderr, "left": sorted(os.listdir(folder))}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    cwd = tmp_path_factory.mktemp("cwd")
    with ThreadPoolExecutor(3) as pool:
        return dict(zip([c[0] for c in CASES], pool.map(lambda c: _run(c, cwd), CASES)))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_family_mistake_is_one_error_line_and_exit_2(case, results):
    name, _, expected = case
    r = results[name]
    assert "Traceback" not in r["err"] and r["rc"] == 2, r["err"]
    last = r["err"].strip().splitlines()[-1]
    assert last.startswith("pixelrl train: error: ") and expected in last, last
    assert r["left"] == [], f"the failed command wrote {r['left']}"


def test_a_config_saved_before_env_family_reads_env_id_as_the_family():
    from pixelrl.config import Config
    from pixelrl.env_family import family_tasks

    old = Config({"env": {"id": "miniwob", "tasks": ["click-test"]}})  # a run folder of before
    family, tasks = family_tasks(old)
    assert (family.name, tasks) == ("miniwob", ["click-test"])
