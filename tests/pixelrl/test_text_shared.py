"""The pieces every text-policy adapter shares (pixelrl/rl/text/): held-out success, the
demonstration folders, the replay of failed starts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pixelrl.config import ConfigError
from pixelrl.rl.text.demos import recorded_roots
from pixelrl.rl.text.heldout import evaluating, success_row
from pixelrl.rl.text.replay import FailedStarts
from pixelrl.stats import wilson_interval


def test_success_row_is_the_rate_with_its_wilson_interval():
    row = success_row([1.0, 0.0, 1.0, 1.0])
    assert row == {"success": 0.75, **dict(zip(("ci_low", "ci_high"), wilson_interval(3, 4)))}
    assert list(row) == ["success", "ci_low", "ci_high"]  # eval.csv's first columns
    # pooled per-task rates, each repeated over its episodes (the GUI's several tasks)
    assert success_row([0.5] * 2 + [1.0] * 3)["ci_low"] == wilson_interval(4, 5)[0]


def test_evaluating_puts_the_model_back_in_the_mode_it_had():
    torch = pytest.importorskip("torch")
    policy = SimpleNamespace(model=torch.nn.Linear(1, 1))
    for was in (True, False):
        policy.model.train(was)
        with evaluating(policy):
            assert not policy.model.training
        assert policy.model.training is was


def test_recorded_roots_name_what_is_wrong(tmp_path):
    with pytest.raises(ConfigError, match="no such folder"):
        recorded_roots(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="not a recorded dataset"):
        recorded_roots(tmp_path)
    for name in ("b", "a"):  # a folder of recordings, one a task: each of them, in order
        (tmp_path / name / "meta").mkdir(parents=True)
        (tmp_path / name / "meta" / "info.json").write_text("{}")
    assert recorded_roots(tmp_path) == [tmp_path / "a", tmp_path / "b"]
    assert recorded_roots(tmp_path / "a") == [tmp_path / "a"]


def test_failed_starts_forget_the_oldest_and_survive_a_checkpoint():
    replay = FailedStarts(1.0, size=2)
    replay.remember([1, 2, 3], [False, False, False])
    assert list(replay.failed) == [2, 3]
    again = FailedStarts(1.0, size=2)
    again.load_state_dict(replay.state_dict())
    assert again.draw(np.random.default_rng(0), 5) == replay.draw(np.random.default_rng(0), 5)


def test_mcnemar_exact_is_the_two_sided_binomial_of_the_discordant_episodes():
    from pixelrl.stats import mcnemar_exact

    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(5, 0) == mcnemar_exact(0, 5) == 2 / 32  # both tails of 5 fair coins
    assert abs(mcnemar_exact(9, 1) - 2 * 11 / 1024) < 1e-12  # P(X <= 1) = (1 + 10) / 2^10
