"""Navigation action text (issue 21): the codec a vision-language policy answers through, and
the IDLE turn that an unparsable answer plays."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pixelrl.envs  # noqa: F401
from pixelrl.envs.nav.action_text import MAX_TEXT, NavActionCodec
from pixelrl.envs.nav.tasks import IDLE, MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT

CODEC = NavActionCodec(forward_step=0.25, turn_degrees=30.0, max_repeat=4, max_steps=8)
F, L, R, S = MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, STOP


@pytest.mark.parametrize(
    "text, actions",
    [
        ("move_forward", (F,)),
        ("move_forward(3)", (F, F, F)),
        ("turn_left(2), move_forward(3)", (L, L, F, F, F)),
        ("turn_right; move_forward then stop", (R, F, S)),
        ("stop", (S,)),
        ("stop()", (S,)),
        ("  Move_Forward( 2 ) .", (F, F)),
        # VLN-R1's words
        ("FORWARD, FORWARD, LEFT", (F, F, L)),
        ("RIGHT and STOP", (R, S)),
        # NaVILA's mid-level phrases, in whole steps of this env
        ("move forward 75 cm", (F, F, F)),
        ("move forward 0.5 m", (F, F)),
        ("turn left 60 degrees", (L, L)),
        ("turn right 30°", (R,)),
        # a reasoning preamble: the text after the last "Action:"
        ("Thought: the goal is left. Action: turn_left(2)", (L, L)),
        ("Action: stop\nAction: move_forward", (F,)),
    ],
)
def test_parses_the_anchors_styles(text, actions):
    assert CODEC.parse(text) == (actions, None)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "no action"),
        ("Action:", "no action"),
        ("jump", "not an action: 'jump'"),
        ("move_forward(5)", "outside 1..4"),
        ("move_forward(0)", "outside 1..4"),
        ("move_forward(4), turn_left(4), stop", "more than 8 steps"),
        ("stop, move_forward", "follows stop"),
        ("stop(2)", "stop takes no count"),
        ("move forward 80 cm", "not a whole number of 25 cm steps"),
        ("turn left 45 degrees", "not a whole number of 30 degrees steps"),
        ("turn left 50 cm", "does not take cm"),
        ("move_forward(-1)", "not an action"),
        ("__import__('os').system('rm -rf /')", "not an action"),
        ("x" * (MAX_TEXT + 1), f"at most {MAX_TEXT}"),
    ],
)
def test_refuses_with_a_reason(text, reason):
    actions, why = CODEC.parse(text)
    assert actions is None and reason in why


def test_non_text_is_refused_not_raised():
    for value in (None, 3, b"stop", ["stop"]):
        actions, why = CODEC.parse(value)
        assert actions is None and "string" in why


@given(st.text(max_size=600))
@settings(max_examples=400, deadline=None)
def test_any_text_parses_to_valid_actions_or_a_reason(text):
    actions, why = CODEC.parse(text)
    if actions is None:
        assert isinstance(why, str) and why
    else:
        assert why is None and 1 <= len(actions) <= CODEC.max_steps
        assert set(actions) <= {S, F, L, R} and S not in actions[:-1]


_WORDS = ["move_forward", "turn_left", "turn_right", "stop", "FORWARD", "LEFT", "move forward",
          "(", ")", "(9999)", "(3)", ",", ";", " then ", " and ", "Action:", "75 cm", "1e999",
          "°", "\n", " ", "-", ".", "0"]  # fmt: skip


@given(st.lists(st.sampled_from(_WORDS), max_size=40))
@settings(max_examples=400, deadline=None)
def test_grammar_shaped_hostile_text_never_raises(parts):
    actions, why = CODEC.parse("".join(parts))
    assert (actions is None) != (why is None)
    if actions is not None:
        assert 1 <= len(actions) <= CODEC.max_steps


@given(st.lists(st.sampled_from([F, L, R]), min_size=1, max_size=8), st.booleans())
@settings(max_examples=200, deadline=None)
def test_render_and_parse_round_trip(actions, stop):
    seq = tuple(actions[: 7 if stop else 8]) + ((S,) if stop else ())
    text = CODEC.render(seq)
    assert CODEC.parse(text) == (seq, None)
    assert CODEC.render(CODEC.parse(text)[0]) == text


def test_render_writes_runs_and_splits_long_ones():
    assert CODEC.render([F, F, F]) == "move_forward(3)"
    assert CODEC.render([L, F, F, S]) == "turn_left, move_forward(2), stop"
    assert CODEC.render([F] * 6) == "move_forward(4), move_forward(2)"  # max_repeat 4
    with pytest.raises(ValueError):
        CODEC.render([])


def test_counts_follow_the_env_step_and_turn():
    codec = NavActionCodec(forward_step=0.5, turn_degrees=15.0)
    assert codec.parse("move forward 1 m")[0] == (F, F)
    assert codec.parse("turn left 45 degrees")[0] == (L, L, L)
    assert codec.parse("move forward 75 cm")[0] is None
    with pytest.raises(ValueError):
        NavActionCodec(max_repeat=0)


def test_idle_turn_keeps_the_pose_and_spends_the_budget():
    env = gymnasium.make("pixelrl/PointNav-v0", sensors=["depth"], width=32, height=32,
                         max_episode_steps=5)  # fmt: skip
    obs, info = env.reset(seed=3)
    state = env.unwrapped.state
    pose = (np.array(state.position).copy(), state.yaw)
    for step in range(1, 6):
        obs2, reward, terminated, truncated, info = env.step(IDLE)
        assert np.allclose(state.position, pose[0]) and state.yaw == pose[1]
        assert np.array_equal(obs2["depth"], obs["depth"])
        assert not terminated and truncated == (step == 5)
        assert reward == pytest.approx(env.unwrapped.cfg.slack_reward)
    assert info["num_steps"] == 5 and not info["success"]
    with pytest.raises(ValueError):  # IDLE is the only action outside Discrete(4)
        env.reset(seed=3)
        env.step(7)
    env.close()


def test_an_index_outside_the_action_space_is_an_error_not_an_idle_turn():
    """step(-1) was played as the idle turn: a policy's bad index spent the budget silently.
    The idle turn is asked for by name; every index outside Discrete(n) is an ActionError."""
    from pixelrl.envs.gui_action import ActionError
    from pixelrl.envs.nav.vector_env import NavVectorEnv

    options = dict(sensors=["depth"], width=16, height=16, num_scenes=1)
    env = gymnasium.make("pixelrl/PointNav-v0", **options)
    env.reset(seed=3)
    for bad in (-1, 4, np.int64(-1)):
        with pytest.raises(ActionError, match=f"action {int(bad)} is not one of the env's "
                           "actions: 0 stop, 1 move_forward, 2 turn_left, 3 turn_right"):  # fmt: skip
            env.step(bad)
    assert env.unwrapped.state.steps == 0
    env.step({"action": IDLE})
    assert env.unwrapped.state.steps == 1
    env.close()
    venv = NavVectorEnv(2, **options)
    venv.reset(seed=0)
    with pytest.raises(ActionError, match="action -1 is not one of the env's actions"):
        venv.step(np.array([1, -1]))
    assert [s.steps for s in venv.states] == [0, 0]
    venv.close()
