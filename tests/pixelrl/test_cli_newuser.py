"""What a new user meets (issue 56): every shipped config a named recipe with a description,
loadable from any folder; help texts that say what a verb does and its defaults; time limits
that bound the whole run and a summary that says what ended it; one-line errors.

The command-line cases run as subprocesses from a scratch folder, as a user would type them
(the error cases follow tests/pixelrl/test_cli_errors.py: one line on stderr, exit 2).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pixelrl.recipes import RECIPES, package_file

PIXELRL = [sys.executable, "-m", "pixelrl"]
SHIPPED = ("gui_agent/configs", "embodied/configs")


def pixelrl(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PIXELRL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def shipped_configs() -> set[Path]:
    return {p.resolve() for folder in SHIPPED for p in package_file(folder).glob("*.yaml")}


def shipped_recipes() -> dict:
    """The package's recipes (not those other tests register in this process, like test/toy)."""
    configs = shipped_configs()
    return {n: r for n, r in RECIPES.items() if r.config.resolve() in configs}


def test_every_shipped_config_is_a_named_recipe_whose_yaml_names_its_base():
    configs = shipped_configs()
    named = {recipe.config.resolve() for recipe in shipped_recipes().values()}
    assert configs and configs == named, sorted(map(str, configs - named))
    for recipe in shipped_recipes().values():
        assert recipe.description, recipe.name
        declared = yaml.safe_load(recipe.config.read_text())["recipe"]
        assert declared == recipe.runs_as, (recipe.name, declared)  # the task it runs


def test_train_list_names_every_recipe_with_a_description(tmp_path):
    done = pixelrl(["train", "--list"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if "/" in line[:30]}
    assert set(lines) == set(shipped_recipes())
    for name in ("gui/ppo-bc", "gui/miniwob-wide", "gui/grounding-sft", "gui/miniwob-vlm-sft"):
        assert RECIPES[name].description in lines[name]


@pytest.mark.parametrize(
    "recipe, expected",
    [
        ("gui/ppo-bc", ["recipe: gui/ppo", "bc_steps: 3300"]),  # a variant by name
        ("gui_agent/configs/ppo_bc.yaml", ["recipe: gui/ppo", "bc_steps: 3300"]),  # old path
        ("gui/grounding-sft", ["recipe: gui/sft"]),  # a text variant: its base's loop
        ("gui_agent/configs/miniwob_vlm_grpo.yaml", ["recipe: gui/multiturn-grpo"]),
    ],
)
def test_a_shipped_config_loads_by_name_and_by_path_from_any_folder(tmp_path, recipe, expected):
    """From a scratch folder (as from an installed wheel): the path resolves to the shipped
    file (pixelrl.recipes.package_file), the name to the same file."""
    done = pixelrl(["train", "--print-config", recipe], tmp_path)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout.splitlines() or f"  {text}" in done.stdout


def test_a_users_own_config_file_still_wins(tmp_path):
    own = tmp_path / "gui_agent" / "configs" / "ppo_bc.yaml"  # shadows the shipped path
    own.parent.mkdir(parents=True)
    own.write_text("recipe: gui/ppo\npolicy:\n  bc_steps: 7\n")
    done = pixelrl(["train", "--print-config", "gui_agent/configs/ppo_bc.yaml"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  bc_steps: 7" in done.stdout.splitlines()


# (id, argv after `pixelrl`, text the one error line must hold)
ERRORS = [
    ("train-kwarg-list-typo",
     ["train", "gui/ppo", "env.kwargs.screen_sise=[320,240]", "train.output_dir=run"],
     "unexpected keyword argument 'screen_sise'; did you mean 'screen_size' (for 'screen_sise')?"),
    ("train-variant-typo", ["train", "gui/ppo-cb"], "did you mean gui/ppo-bc"),
    ("train-missing-config", ["train", "gui_agent/configs/ppo_cb.yaml"],
     "config file not found: gui_agent/configs/ppo_cb.yaml"),
]  # fmt: skip


@pytest.mark.parametrize("argv, expected", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_new_user_mistakes_are_one_line_and_exit_2(tmp_path, argv, expected):
    done = pixelrl(argv, tmp_path, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("pixelrl train: error: "), done.stderr[-2000:]
    assert expected in lines[0]
    assert not (tmp_path / "run").exists()  # nothing written


@pytest.mark.parametrize(
    "verb, expected",
    [
        ("serve", "default 8000"),
        ("serve", "default 16"),
        ("demo", "gui part:"),  # which flags apply to which part
        ("demo", "1. ``experts``"),  # what it does
        ("train", "the summary says what ended the run"),
        ("envs", "one-line description"),
    ],
)
def test_help_says_what_a_verb_does_and_its_defaults(tmp_path, verb, expected):
    done = pixelrl([verb, "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert expected in " ".join(done.stdout.split()) or expected in done.stdout


def test_top_level_help_and_envs_say_what_train_and_the_nav_envs_are(tmp_path):
    top = pixelrl(["--help"], tmp_path).stdout
    train = next(line for line in top.splitlines() if line.strip().startswith("train"))
    assert "SFT" in train and "GRPO" in train
    envs = pixelrl(["envs", "--filter", "PointNav"], tmp_path).stdout
    assert "raster" in envs and "embedded Embree simulator" not in envs


def test_the_time_limit_bounds_a_warm_start_and_the_summary_says_what_ended(tmp_path, monkeypatch):
    """A recipe's warm start inside make_policy (here a 0.3 s sleep) counts against
    train.time_limit_minutes: the run stops before its first update and says why."""
    from toy_nav import register_toy_recipe

    from pixelrl.recipes import get_recipe
    from pixelrl.train import Trainer, config_for

    recipe = register_toy_recipe()
    task = get_recipe(recipe).load_task()
    make_policy = task.make_policy

    def slow_make_policy(*args, **kwargs):  # a behaviour-cloning warm start, say
        time.sleep(0.3)
        return make_policy(*args, **kwargs)

    monkeypatch.setattr(task, "make_policy", slow_make_policy)
    cfg = config_for(
        recipe,
        [f"train.output_dir={tmp_path}", "train.total_frames=100000", "train.final_eval=false",
         "train.time_limit_minutes=0.004"],  # 0.24 s
    )  # fmt: skip
    trainer = Trainer(cfg)
    header = trainer.header()
    assert "1 process" in header and "torch threads" in header and str(tmp_path) in header
    result = trainer.run()
    assert result["ended"] == "train.time_limit_minutes=0.004 reached"
    assert result["train"] == {}  # not one update: the warm start used the budget


def test_a_run_without_limits_ends_on_its_frames(tmp_path, capsys):
    from toy_nav import register_toy_recipe

    from pixelrl.commands.train import print_summary
    from pixelrl.train import Trainer, config_for

    cfg = config_for(
        register_toy_recipe(),
        [f"train.output_dir={tmp_path}", "train.total_frames=256", "train.final_eval=false"],
    )
    result = Trainer(cfg).run()
    assert result["ended"] == "train.total_frames=256 reached"
    print_summary(result)
    assert "ended: train.total_frames=256 reached after" in capsys.readouterr().out


def test_a_text_run_says_on_how_many_ranks_it_runs(capsys):
    from pixelrl.gui_agent.train_vlm import config_for
    from pixelrl.rl.text.parallel import Parallel

    cfg = config_for(RECIPES["gui/sft"].config, ["torch_threads=2"])
    Parallel(cfg)  # what every text loop builds first; no torchrun here
    assert "gui/sft: 1 process, device cpu, torch threads 2" in capsys.readouterr().out


def test_gui_ppo_time_limit_cuts_cloning_and_scores_the_cloned_policy(tmp_path):
    """gui/ppo under a tiny time limit: behaviour cloning stops at once, no PPO update runs,
    the held-out score of the cloned policy is the curve's first point (eval_at_start), and the
    summary says the limit ended the run."""
    done = pixelrl(
        ["train", "gui/ppo", "train.time_limit_minutes=1e-9", "train.output_dir=run",
         "train.progress=false", "policy.bc_samples=4", "policy.bc_steps=50", "env.num_envs=2",
         "train.eval_episodes=2", "train.eval_num_envs=1", "env.kwargs.screen_size=[320,240]"],
        tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "behaviour cloning stopped after 0 of 50 steps" in done.stdout + done.stderr
    assert "ended: train.time_limit_minutes=1e-09 reached" in done.stdout
    assert "updates 0" in done.stdout
    rows = (tmp_path / "run" / "eval.csv").read_text().splitlines()
    assert rows[1].startswith("0,") and len(rows) == 2, rows  # the score after cloning
