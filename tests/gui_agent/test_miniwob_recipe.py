"""gui/miniwob: one pointer policy on several MiniWoB++ tasks (oracle cloning, then PPO)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from pixelrl.config import ConfigError
from pixelrl.envs.gui_action import Action, ActionError
from pixelrl.gui_agent import miniwob_task
from pixelrl.gui_agent.pointer_env import PointerSpec, decode_action, encode_action, field_text
from pixelrl.train import config_for

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)
TWO = "env.tasks=[click-tab,enter-password]"


def test_field_texts_type_the_episodes_own_fields():
    spec = PointerSpec(image_size=(160, 208), kinds=("click", "type"), texts=("{field:0}", "ok"))
    fields = ["Pavia", "x9"]
    typed = decode_action([1, 0, 0, 0, 0], spec, None, fields)
    assert typed == Action.type_text("Pavia")
    assert decode_action([1, 0, 0, 1, 0], spec, None, fields) == Action.type_text("ok")
    # the expert's text maps back to the field that holds it; text in no field has no sample
    assert encode_action(Action.type_text("Pavia"), spec, None, fields)[3] == 0
    assert encode_action(Action.type_text("ok"), spec, None, fields)[3] == 1
    assert encode_action(Action.type_text("x9"), spec, None, fields) is None
    with pytest.raises(ActionError, match="1 task field"):
        field_text("{field:1}", ["only"])


def test_field_templates_type_a_field_in_one_case():
    # enter-text-2: "Type "KASIE" in all lower case letters" has fields ["KASIE", "lower"]
    spec = PointerSpec(image_size=(160, 208), kinds=("click", "type"),
                       texts=("{field:0}", "{field:0:upper}", "{field:0:lower}"))  # fmt: skip
    fields = ["KaSie", "lower"]
    assert [field_text(t, fields) for t in spec.texts] == ["KaSie", "KASIE", "kasie"]
    assert decode_action([1, 0, 0, 2, 0], spec, None, fields) == Action.type_text("kasie")
    # the expert's text maps to the first template that types it
    assert encode_action(Action.type_text("kasie"), spec, None, fields)[3] == 2
    assert encode_action(Action.type_text("KASIE"), spec, None, fields)[3] == 1
    assert encode_action(Action.type_text("KaSie"), spec, None, fields)[3] == 0
    assert encode_action(Action.type_text("83"), spec, None, ["83"])[3] == 0
    assert encode_action(Action.type_text("kAsie"), spec, None, fields) is None
    # a misspelt template is refused, not typed as it stands
    for bad in ("{field:0:uper}", "{feild:0}", "{field:x}", "{field:0:upper:lower}"):
        with pytest.raises(ValueError, match="not a task-field template"):
            PointerSpec(image_size=(160, 208), kinds=("type",), texts=(bad,))
    with pytest.raises(ValueError, match="not a string"):  # YAML's reading of [{field:0}]
        PointerSpec(image_size=(160, 208), kinds=("type",), texts=({"field:0": None},))
    # braces that do not wrap the whole text are plain text
    assert PointerSpec(image_size=(160, 208), kinds=("type",), texts=("a {b} c",)).texts


def test_a_wait_kind_lets_a_sliding_section_settle():
    # the oracle waits while an accordion slides open (click-collapsible); the spec can say so
    spec = PointerSpec(image_size=(160, 208), kinds=("click", "wait"))
    assert decode_action([1, 5, 1, 0, 0], spec, None) == Action.wait()
    assert encode_action(Action.wait(), spec, None).tolist() == [1, 0, 0, 0, 0]
    assert (
        encode_action(Action.wait(), PointerSpec(image_size=(160, 208), kinds=("click",)), None)
        is None
    )
    with pytest.raises(ValueError, match="'sleep' is not a pointer kind"):
        PointerSpec(image_size=(160, 208), kinds=("click", "sleep"))


def test_unknown_and_oracle_less_tasks_are_refused_before_any_browser():
    with pytest.raises(ConfigError, match="click-buton"):
        miniwob_task.tasks_of(config_for("gui/miniwob", ["env.tasks=[click-buton]"]))
    cfg = config_for("gui/miniwob", ["env.tasks=[click-tab,book-flight]"])
    assert miniwob_task.tasks_of(cfg) == ["click-tab", "book-flight"]  # PPO alone could
    with pytest.raises(ConfigError, match="cannot play 'book-flight'.*bc_steps=0"):
        miniwob_task.tasks_of(cfg, need_oracle=True)


def test_cli_refuses_an_oracle_less_task_in_one_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pixelrl", "train", "gui/miniwob", "env.tasks=[book-flight]",
         f"train.output_dir={tmp_path / 'run'}"],  # fmt: skip
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("pixelrl train: error: env.tasks:")
    assert "cannot play 'book-flight'" in out.stderr


@needs_browser
def test_training_demonstrations_never_use_held_out_seeds(tmp_path):
    from pixelrl.envs.recording import EpisodeDataset

    cfg = config_for("gui/miniwob", [TWO, f"policy.bc_demos={tmp_path / 'demos'}"])
    data = miniwob_task.oracle_samples(cfg, 12, seed=0)
    assert len(data["action"]) == 12
    train_pages = set()
    for task in ("click-tab", "enter-password"):
        demos = EpisodeDataset(tmp_path / "demos" / task)
        assert len(demos) >= 1
        for seed in demos.to_pandas().groupby("episode_index")["seed"].first():
            assert seed % 2 == 0, "a demonstration was recorded on a held-out (odd) seed"
            train_pages.add((task, int(seed)))
    envs = miniwob_task.make_envs(cfg, 2, seed=0, split="eval")
    try:
        _, info = envs.reset(seed=0)
        held_out = {
            (t, int(s)) for t, s in zip(("click-tab", "enter-password"), info["episode_seed"])
        }
        assert all(s % 2 == 1 for _, s in held_out)
        assert not held_out & train_pages
    finally:
        envs.close()


@needs_browser
def test_oracle_samples_are_the_same_from_one_worker_or_two():
    # the demonstrations are recorded a task a process, side by side: the data must not change
    one = miniwob_task.oracle_samples(config_for("gui/miniwob", [TWO, "policy.bc_workers=1"]), 8, 0)
    two = miniwob_task.oracle_samples(config_for("gui/miniwob", [TWO, "policy.bc_workers=2"]), 8, 0)
    assert one.keys() == two.keys() and len(one["action"]) == 8
    for key in one:
        np.testing.assert_array_equal(one[key], two[key], err_msg=key)
    with pytest.raises(ValueError, match="bc_workers must be an integer >= 0, got -2"):
        miniwob_task.bc_workers(config_for("gui/miniwob", [TWO, "policy.bc_workers=-2"]), 2)
    with pytest.raises(ConfigError, match="bc_workers must be a number"):  # the config's check
        config_for("gui/miniwob", [TWO, "policy.bc_workers=two"])
    assert miniwob_task.bc_workers(config_for("gui/miniwob", [TWO, "policy.bc_workers=8"]), 2) == 2


@needs_browser
def test_the_recipe_runs_end_to_end_on_two_tasks(tmp_path, capsys):
    from pixelrl.train import train

    cfg = config_for(
        "gui/miniwob",
        [TWO, "env.num_envs=2", "policy.bc_samples=8", "policy.bc_steps=2",
         "train.total_frames=32", "ppo.num_steps=8", "ppo.critic_warmup_updates=1",
         "train.eval_interval=0", "train.final_eval=false", "train.progress=true",
         "train.async=true", "torch_threads=0", f"policy.bc_demos={tmp_path / 'demos'}",
         f"train.output_dir={tmp_path / 'run'}"],
    )  # fmt: skip
    # the env worker (train.async) builds its policy copy without cloning again: a second
    # warm start would record into the same demos folder and stop the run
    result = train(cfg)
    assert result["train"]["frames"] == 32
    assert list((tmp_path / "run" / "checkpoints").glob("*.pt"))
    # the rule left a core to the env worker; it waits while the learner clones (threads.py),
    # and config.yaml keeps the cloning's count for a rerun
    out = capsys.readouterr().out
    assert "1 env workers waiting)" in out
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert f"behaviour cloning: torch threads {saved['policy']['bc_threads']} (auto:" in out


def test_subwords_give_an_unseen_word_a_vector_from_its_letters():
    import torch

    from pixelrl.gui_agent.pointer_env import hash_words
    from pixelrl.gui_agent.pointer_policy import InstructionEncoder

    ids = hash_words("Select RUA4Edn and Lc", 6, 4096, subwords=4)
    assert ids.shape == (6, 5)
    assert (ids[:, 0] == hash_words("Select RUA4Edn and Lc", 6, 4096)).all()
    assert (ids[3, 1:] > 0).sum() == 2 and (ids[1, 1:] > 0).all()  # "<lc", "lc>"; 4 of 7
    assert (ids[4:] == 0).all()
    enc = InstructionEncoder(4096, 8, 16)
    torch.nn.init.zeros_(enc.embed.weight[hash_words("lc", 1, 4096)[0]])  # the word itself: blank
    vec = enc.embed_words(torch.as_tensor(ids)[None])
    assert vec[0, 3].abs().sum() > 0  # its trigrams still say what it looks like
    # every head of the policy, and the reading and naming losses, take subword ids
    from pixelrl.gui_agent.pointer_policy import PointerPolicy

    spec = PointerSpec(image_size=(32, 32), kinds=("click",), subwords=4, max_words=6)
    policy = PointerPolicy(spec, channels=16, hidden=32, match_heads=2)
    obs = {"image": torch.zeros(2, 32, 32, 3, dtype=torch.uint8),
           "instruction": torch.as_tensor(np.stack([ids, ids]))}  # fmt: skip
    heads = policy.heads(obs)
    cells = torch.zeros(2, 6, spec.num_cells, dtype=torch.bool)
    cells[:, :, 0] = True
    read = policy.reading_log_likelihood(heads["features"], obs["instruction"], cells)
    said = policy.named_log_likelihood(heads, obs["instruction"], obs["instruction"], cells)
    assert read.shape == (2, 6) and torch.isfinite(read).all() and torch.isfinite(said).all()


def _table_bench(name: str = "miniwob_table"):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wide_config_is_every_oracle_task_with_published_figures():
    from pixelrl.envs.web.oracle import SUPPORTED_TASKS
    from pixelrl.recipes import package_file

    table = _table_bench()
    cfg = config_for(str(package_file("gui_agent/configs/miniwob_wide.yaml")))
    tasks = list(cfg.env.tasks)
    assert sorted(tasks) == sorted(set(SUPPORTED_TASKS) & set(table.PUBLISHED))
    assert len(tasks) == len(set(tasks)) >= 30 and cfg.env.num_envs == len(tasks)
    assert miniwob_task.tasks_of(cfg, need_oracle=True) == tasks
    PointerSpec(image_size=(160, 208), kinds=tuple(cfg.policy.kinds), texts=tuple(cfg.policy.texts))
    # the bench's task sets: the recipe's twelve first, then the wide set; a run's own by default
    assert table.TWELVE == list(config_for("gui/miniwob").env.tasks)
    assert table.task_list(["twelve", "navigate-tree"], None) == [*table.TWELVE, "navigate-tree"]
    assert table.task_list(None, None) == table.TWELVE
    agent = type("Agent", (), {"tasks": ["click-tab"]})()
    assert table.task_list(None, agent) == ["click-tab"]
    assert table.task_list(["wide"], agent) == list(table.PUBLISHED)
    with pytest.raises(ValueError, match="'click-buton'.*did you mean.*click-button"):
        table.task_list(["click-buton"], None)


def test_the_ticks_bench_reads_the_named_boxes_and_the_mass_on_a_box():
    ticks = _table_bench("miniwob_ticks")
    assert ticks.named_boxes("Select oJV, pcGs7 and click Submit.") == ["oJV", "pcGs7"]
    assert ticks.named_boxes("Select nothing and click Submit.") == []
    with pytest.raises(SystemExit, match="not a checkbox instruction"):
        ticks.named_boxes("Click on the button.")
    heat = np.zeros((4, 5))
    heat[3, 1], heat[3, 2], heat[0, 0] = 0.5, 0.25, 0.25  # cell 8: centres at 4, 12, 20, ...
    assert ticks.mass_in(heat, [8, 24, 23, 31], cell=8) == 0.75  # the bottom row's 2nd, 3rd
    assert ticks.mass_in(heat, [30, 0, 39, 7], cell=8) == 0.0


@needs_browser
def test_the_table_bench_runs_and_merges(tmp_path):
    import json
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench" / "miniwob_table.py"
    out = tmp_path / "oracle.json"
    run = [sys.executable, str(bench)]
    subprocess.run(run + ["oracle", "--episodes", "2", "--tasks", "click-dialog", "--json",
                          str(out)], check=True, capture_output=True, timeout=300)  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["task"] == "click-dialog" and rows[0]["success"] == 1.0  # the oracle solves it
    table = subprocess.run(run + ["--merge", str(out)], check=True, capture_output=True,
                           text=True).stdout  # fmt: skip
    assert "click-dialog" in table and "human" in table
    # each episode's seed and outcome is kept: two runs compare episode by episode
    assert [o[1] for o in rows[0]["outcomes"]] == [1, 1] and all(
        o[0] % 2 for o in rows[0]["outcomes"]
    )
    paired = subprocess.run(run + ["--merge", str(out), "--paired", str(out)], check=True,
                            capture_output=True, text=True).stdout  # fmt: skip
    assert "| click-dialog | 2 | 1.00 | 1.00 | 0 | 0 | 1 |" in paired
    old = tmp_path / "old.json"  # a table from before the episodes were kept
    old.write_text(json.dumps({"rows": [{k: v for k, v in rows[0].items() if k != "outcomes"}]}))
    refused = subprocess.run(run + ["--merge", str(out), "--paired", str(old)],
                             capture_output=True, text=True)  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith("miniwob_table.py: error: --paired:")


@needs_browser
def test_the_vlm_recipes_clone_and_grpo_on_two_tasks(tmp_path):
    """Issue 26's second recipe: SFT on the oracle's episodes of two MiniWoB++ tasks (training
    seeds only), then multi-turn GRPO from that model; success reported per task."""
    from pixelrl.envs.recording import EpisodeDataset
    from pixelrl.gui_agent.train_vlm import config_for as vlm_config
    from pixelrl.gui_agent.train_vlm import train as train_vlm
    from pixelrl.recipes import package_file

    small = ["torch_threads=0", TWO, "tokenizer.screens=0", "env.max_steps=3",
             "eval.episodes=1", "train.progress=false"]  # fmt: skip
    sft = vlm_config(package_file("gui_agent/configs/miniwob_vlm_sft.yaml"), [
        *small, "data.episodes=2", "sft.steps=2", f"train.output_dir={tmp_path / 'sft'}",
    ])  # fmt: skip
    result = train_vlm(sft)
    for task in ("click-tab", "enter-password"):
        demos = EpisodeDataset(tmp_path / "sft" / "demos" / task)
        seeds = demos.to_pandas().groupby("episode_index")["seed"].first()
        assert len(seeds) == 1 and all(s % 2 == 0 for s in seeds)  # training seeds only
    last = result["eval"][-1]
    assert last["n"] == 2 and {"click-tab", "enter-password"} <= set(last)
    grpo = vlm_config(package_file("gui_agent/configs/miniwob_vlm_grpo.yaml"), [
        *small, f"init={tmp_path / 'sft' / 'model'}", "grpo.steps=2", "grpo.num_samples=2",
        "grpo.seeds_per_step=1", "grpo.max_new_tokens=8", f"train.output_dir={tmp_path / 'grpo'}",
    ])  # fmt: skip
    result = train_vlm(grpo)
    assert (tmp_path / "grpo" / "model").is_dir() and len(result["eval"]) == 2
    with open(tmp_path / "grpo" / "history.csv") as f:
        assert len(f.read().strip().splitlines()) == 3  # header + 2 steps, one task each


@needs_browser
def test_with_envs_in_ray_actors_each_worker_runs_its_own_task():
    pytest.importorskip("ray")
    from pixelrl.rl.vector_envs import make_vector_envs

    cfg = config_for("gui/miniwob", [TWO, "envs.backend=ray", "envs.per_worker=1"])
    envs = make_vector_envs(miniwob_task, cfg, 2, seed=0, split="train")
    try:
        assert envs.get_attr("task") == ("click-tab", "enter-password")
        obs, info = envs.reset(seed=0)
        assert all(s % 2 == 0 for s in info["episode_seed"])  # training seeds in every actor
    finally:
        envs.close()


@needs_browser
def test_cloning_counts_any_box_still_to_tick_as_right():
    # click-checkboxes-large 0.30 with memory (issue 54): the oracle ticks in the sentence's
    # order, but each box still to tick is as right as the next (issue 5's desktop check-boxes)
    from pixelrl.gui_agent import ppo_task
    from pixelrl.gui_agent.pointer_bc import box_points, expert_samples

    cfg = config_for("gui/miniwob", ["env.tasks=[click-checkboxes]"])
    spec = ppo_task.pointer_spec(cfg)
    env = ppo_task.make_env("pixelrl/MiniWoB-click-checkboxes-v0", spec, "train")
    seen = 0
    try:
        for seed in range(0, 12, 2):
            data = expert_samples(env, 1, seed=seed)  # one step: the oracle's first aim stays
            web = env.unwrapped
            target, others = web.expert_target_bbox, web.expert_alternative_bboxes
            sample, mask = data["action"][0], data["point_mask"][0]
            alone = box_points([target], sample, spec, env.image_map)
            assert (mask >= alone).all()
            for x0, y0, x1, y1 in others:
                seen += 1
                point = Action.click((x0 + x1) // 2, (y0 + y1) // 2)
                cell, offset = encode_action(point, spec, env.image_map)[1:3]
                assert mask[cell, offset] and not alone[cell, offset]
    finally:
        env.close()
    assert seen > 0, "no training seed named two boxes"


@needs_browser
def test_the_submit_after_k_ticks_weighs_k_and_weighted_batches_draw_it_more():
    # click-checkboxes-large's policy ticked one box too many (issue 54): an episode shows its
    # "every box ticked: Submit" state once against one state a tick
    from pixelrl.gui_agent import ppo_task
    from pixelrl.gui_agent.pointer_bc import batch_indices, expert_samples

    cfg = config_for("gui/miniwob", ["env.tasks=[click-checkboxes]"])
    spec = ppo_task.pointer_spec(cfg)
    env = ppo_task.make_env("pixelrl/MiniWoB-click-checkboxes-v0", spec, "train")
    try:
        data = expert_samples(env, 24, seed=4)
    finally:
        env.close()
    firsts = np.flatnonzero((data["last_actions"] == 0).all((1, 2)))  # each episode's first step
    assert len(firsts) >= 3
    closed = 0
    for start, end in zip(firsts[:-1], firsts[1:]):  # whole episodes: k ticks, then Submit
        weights = data["stop_weight"][start:end]
        assert (weights[:-1] == 1).all() and weights[-1] == max(1, end - start - 1)
        closed += end - start - 1 > 1
    assert closed > 0, "no episode ticked two boxes or more"
    gen = np.random.default_rng(0)
    heavy = np.ones(100)
    heavy[7] = 20.0
    drawn = np.concatenate([batch_indices(gen, 100, 8, heavy) for _ in range(400)])
    plain = np.concatenate([batch_indices(gen, 100, 8) for _ in range(400)])
    assert (drawn == 7).sum() > 5 * (plain == 7).sum() > 0
    for n, size in ((100, 8), (5, 5)):  # distinct samples, all of them when there are fewer
        batch = batch_indices(gen, n, 8, heavy[:n])
        assert sorted(set(batch.tolist())) == sorted(batch.tolist()) and len(batch) == size


def test_the_widest_config_is_sixty_or_more_tasks_with_human_figures():
    # issue 54's widest set: every task the probe found cloneable that has published figures
    from pixelrl.recipes import package_file

    table = _table_bench()
    cfg = config_for(str(package_file("gui_agent/configs/miniwob_widest.yaml")))
    tasks = list(cfg.env.tasks)
    assert len(tasks) == len(set(tasks)) >= 60 and cfg.env.num_envs == len(tasks)
    assert set(tasks) <= set(table.TABLE), "a task without published human figures"
    wide = config_for(str(package_file("gui_agent/configs/miniwob_wide.yaml")))
    assert tasks[: len(wide.env.tasks)] == list(wide.env.tasks)  # the 32 first
    assert miniwob_task.tasks_of(cfg, need_oracle=True) == tasks
    miniwob_task.pointer_spec(cfg)  # kinds, texts and keys make a spec


def _playable(*args: str) -> subprocess.CompletedProcess:
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench" / "miniwob_playable.py"
    return subprocess.run([sys.executable, str(bench), *args], capture_output=True, text=True,
                          timeout=300)  # fmt: skip


@needs_browser
def test_the_playable_probe_names_what_a_spec_cannot_type(tmp_path):
    out = tmp_path / "rows.json"
    run = _playable("--tasks", "click-test", "enter-text", "--episodes", "1", "--json", str(out),
                    "policy.texts=[ok]")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    import json

    rows = {r["task"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["click-test"]["playable"] and rows["click-test"]["oracle_success"] == 1
    assert not rows["enter-text"]["playable"]
    assert "add '{field:0}' to policy.texts" in rows["enter-text"]["reasons"][0]
    assert "playable: 1 of 2 tasks" in run.stdout


def test_the_playable_probe_refuses_an_unknown_task_in_one_line():
    run = _playable("--tasks", "click-buton")
    assert run.returncode == 2
    assert "click-buton" in run.stderr and "Traceback" not in run.stderr
