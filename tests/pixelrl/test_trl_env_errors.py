"""Bad env ids for TRL environments (issue 55): one clear ``ValueError`` naming the ids a TRL
environment wraps, nearest first, before any env is made (not a ToolError or an IndexError at
reset)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from pixelrl.trl_env import ToolError, environment_factory, train_dataset, trl_env_ids  # noqa: E402


@pytest.mark.parametrize(
    "env_id, first, nearest",
    [
        ("pixelrl/Nope-v0", "unknown env id 'pixelrl/Nope-v0'", None),
        ("pixelrl/Desktop-ClickButon-v0", "unknown env id", "pixelrl/Desktop-ClickButton-v0"),
        ("PointNav-v0", "unknown env id 'PointNav-v0'", "pixelrl/PointNav-v0"),
        ("CartPole-v1", "'CartPole-v1' is not a GUI or navigation env", None),
        (None, "unknown env id 'None'", None),
    ],
)
def test_an_env_id_no_trl_environment_wraps_is_one_clear_value_error(env_id, first, nearest):
    for make in (environment_factory, lambda e: train_dataset(e, seeds=[0])):
        with pytest.raises(ValueError) as caught:
            make(env_id)
        message = str(caught.value)
        assert not isinstance(caught.value, ToolError) and "\n" not in message
        assert message.startswith(first)
        listed = message.split("nearest first: ")[1].split(" and ")[0].split(", ")
        assert listed[0] == (nearest or listed[0]) and len(listed) == 8
        assert all(i in trl_env_ids() for i in listed)
        assert message.endswith(f"and {len(trl_env_ids()) - 8} more (`pixelrl envs` lists them)")


def test_the_wrapped_ids_are_the_gui_and_navigation_families():
    ids = trl_env_ids("pixelrl/PointNav-v0")
    assert ids[0] == "pixelrl/PointNav-v0"
    assert {"pixelrl/Desktop-ClickButton-v0", "pixelrl/MiniWoB-click-button-v0"} <= set(ids)
    assert not any(i.startswith("CartPole") for i in ids)
