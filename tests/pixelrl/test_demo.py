"""`pixelrl demo`: the experts part end to end, the GUI part on a tiny budget (curve, GIF frame
delays read back), the background PointNav part's hand-over (its training is exercised by the
short-run tests in tests/embodied)."""

from __future__ import annotations

import pytest
from PIL import Image

from pixelrl.cli import main


def test_experts_part_solves_every_family_and_writes_the_contact_sheet(tmp_path, capsys):
    code = main(
        ["demo", "--parts", "experts", "--seeds", "1", "--size", "320x240", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "[1/1] desktop experts: the scripted expert on every emulated-desktop family" in out
    assert "15/15 episodes solved" in out
    sheet = Image.open(tmp_path / "desktop_experts.png")
    assert sheet.width > 320 and sheet.height > 15 * 100  # a row per family


def test_unknown_part_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--parts", "experts,dance", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert (
        "pixelrl demo: error: argument --parts: unknown part(s) 'dance'" in capsys.readouterr().err
    )


def gif_delays(path) -> list[int]:
    """Each frame's delay in milliseconds, as PIL reads it back."""
    image = Image.open(path)
    delays = []
    for k in range(image.n_frames):
        image.seek(k)
        delays.append(image.info["duration"])
    return delays


class Waiting:
    """An agent that always waits (each episode runs to its step limit)."""

    def reset(self) -> None:
        pass

    def act(self, screenshot, instruction):
        from pixelrl.envs.gui_action import Action

        return Action.wait()


def test_agent_gif_plays_at_the_intended_rate(tmp_path):
    from pixelrl.gui_agent.demo import record_gif

    path = record_gif(Waiting(), "pixelrl/Desktop-ClickButton-v0", tmp_path / "a.gif", episodes=2,
                      env_kwargs={"screen_size": (320, 240)}, fps=1.5)  # fmt: skip
    delays = gif_delays(path)
    assert len(delays) == 2 * 8  # 7 waits (the step limit), then the outcome, per episode
    # GIF keeps hundredths of a second: 1/1.5 s is 660 or 670 ms, never 0
    assert all(abs(d - 1000 / 1.5) <= 10 for d in delays), delays


def test_gui_part_clones_the_expert_and_plots_held_out_success(tmp_path, capsys):
    from pixelrl.gui_agent.demo import pointer_bc_demo

    result = pointer_bc_demo(tmp_path, samples=64, steps=4, every=2, curve_episodes=2,
                             eval_episodes=2)  # fmt: skip
    assert [step for step, _ in result["points"]] == [0, 2, 4]
    assert len(result["losses"]) == 4
    assert (tmp_path / "curve.csv").read_text().splitlines()[0] == "bc_step,held_out_success"
    assert Image.open(tmp_path / "learning_curve.png").width > 300
    assert (tmp_path / "policy.pt").stat().st_size > 0
    assert all(abs(d - 1000 / 1.5) <= 10 for d in gif_delays(tmp_path / "agent.gif"))
    out = capsys.readouterr().out
    assert "BC step     2: held-out success" in out and "after 4 behaviour-cloning steps" in out


def test_background_pointnav_part_prints_its_table_or_its_failure(tmp_path, capsys):
    import sys

    from pixelrl.commands.demo import NavJob

    measures = {"trained (PPO)": {"success": 0.5}}
    child = (
        "import json, pathlib, sys; print('training ...', end='\\r'); print('100%')\n"
        "print('\\nPointNav on 3 held-out\\nrow')\n"
        f"pathlib.Path(sys.argv[1], 'measures.json').write_text(json.dumps({measures!r}))"
    )
    job = NavJob(tmp_path, 100, command=[sys.executable, "-c", child, str(tmp_path)])
    assert job.finish() == measures
    assert capsys.readouterr().out.endswith("PointNav on 3 held-out\nrow\n")
    wall, cpu = job.seconds()
    assert wall > 0 and cpu > 0

    job = NavJob(tmp_path, 100, command=[sys.executable, "-c", "raise SystemExit(3)"])
    assert job.finish() is None  # and the previous run's measures.json was removed
    assert "the PointNav part failed (exit 3)" in capsys.readouterr().out
