"""What a new user meets in pictures and exports (issue 56): the error cases of the verbs that
make them (one line ``pixelrl VERB: error: ...``, exit 2, nothing written; as
``test_cli_errors.py``), then what the pictures and texts hold.

The pictures are checked through what matplotlib and the caption code say they drew (titles'
boxes, legend entries, caption lines), never through pixels.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_forks import run_cases  # a process a case, forked from a server that imported torch

CLICK = "pixelrl/Desktop-ClickButton-v0"

# (id, argv after the program, text the error line must hold); {data} is the fixture folder.
CASES = [
    ("export-missing-dataset", ["export", "lerobot", "{data}/nothere", "--out", "lr"],
     "nothere/meta/info.json: not found; is"),
    ("export-corrupt-dataset", ["export", "lerobot", "{data}/corrupt", "--out", "lr"],
     "corrupt/meta/info.json: not valid JSON"),
    ("export-out-not-empty", ["export", "lerobot", "{data}/demos", "--out", "{data}/full"],
     "full: exists and is not empty; name a new or empty folder"),
    ("export-out-is-a-file", ["export", "lerobot", "{data}/demos", "--out", "{data}/file.txt"],
     "file.txt: exists and is not a folder"),
    ("export-no-format", ["export", "lerobot"], "DATASET_DIR"),
    ("export-unknown-format", ["export", "rlds", "{data}/demos", "--out", "lr"],
     "invalid choice: 'rlds'"),
]  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.recording import RecordEpisodes

    root = tmp_path_factory.mktemp("cli_pictures")
    env = RecordEpisodes(gymnasium.make(CLICK, screen_size=(320, 240)), root / "demos")
    env.reset(seed=0)
    env.step(env.unwrapped.expert_action())
    env.close()
    (root / "corrupt" / "meta").mkdir(parents=True)
    (root / "corrupt" / "meta" / "info.json").write_text('{"fps": 4, ')
    (root / "full").mkdir()
    (root / "full" / "keep.txt").write_text("a user's file")
    (root / "file.txt").write_text("not a folder")
    return root


@pytest.fixture(scope="module")
def results(data, tmp_path_factory) -> dict[str, dict]:
    return run_cases(CASES, tmp_path_factory.mktemp("cwd"), data)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_user_mistake_is_one_error_line_and_exit_2(case, results, data):
    name, argv, expected = case
    r = results[name]
    assert "Traceback" not in r["out"] + r["err"] and r["rc"] == 2, r
    last = r["err"].strip().splitlines()[-1]
    verb = "pixelrl export" + (" lerobot" if argv[1] == "lerobot" else "")
    assert last.startswith(f"{verb}: error: ") and expected in last, last
    assert r["left"] == [], f"the failed command wrote {r['left']}"
    assert sorted(os.listdir(data / "full")) == ["keep.txt"]  # a user's folder left as it was


def test_export_lerobot_writes_a_lerobot_v3_dataset(data, tmp_path, capsys):
    from pixelrl.cli import main

    assert main(["export", "lerobot", str(data / "demos"), "--out", str(tmp_path / "lr")]) == 0
    assert capsys.readouterr().out.startswith(
        f"wrote {tmp_path / 'lr'}: 1 episode(s), 1 frames, LeRobot v3"
    )
    info = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_frames"] == 1
    assert (tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").is_file()


# -- bench nav's paths.png ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def paths_figure(tmp_path_factory, monkeypatch_module):
    """The figure ``Benchmark.evaluate`` saves as paths.png: the expert on 8 episodes in the
    small apartments of ``make demo`` (square and wide maps mixed, where titles used to run into
    the map above and off the page), 6 drawn."""
    from matplotlib.figure import Figure

    from pixelrl.embodied.agents import ExpertAgent
    from pixelrl.embodied.benchmark import BLIND_OPTIONS, Benchmark
    from pixelrl.envs.nav.sim import generate_dataset

    root = tmp_path_factory.mktemp("paths")
    rules = {"min_geodesic": 1.0, "max_geodesic": 4.0, "min_ratio": 1.0}
    generate_dataset(str(root / "val.json.gz"), 8, num_scenes=4, scene_seed=100000,
                     apartment={"rooms": [1, 2], "clutter": 0.5}, episode_rules=rules)  # fmt: skip
    saved: list[Figure] = []
    save = Figure.savefig
    monkeypatch_module.setattr(
        Figure, "savefig", lambda fig, *a, **k: saved.append(fig) or save(fig, *a, **k)
    )
    bench = Benchmark(root / "val.json.gz", **BLIND_OPTIONS)
    bench.evaluate(ExpertAgent(bench.env), output_dir=root, num_path_plots=6, progress=False)
    bench.close()
    assert (root / "paths.png").is_file() and len(saved) == 1
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(saved[0]).draw()  # pyplot closed it: a canvas of its own to lay it out again
    return saved[0]


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_paths_png_titles_stay_inside_and_apart(paths_figure):
    fig = paths_figure
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    drawn = [ax for ax in fig.axes if ax.images]
    assert len(drawn) == 6 and all(ax.title.get_text() for ax in drawn)
    titles = [ax.title.get_window_extent(renderer) for ax in drawn]
    maps = [ax.images[0].get_window_extent(renderer) for ax in drawn]
    for i, a in enumerate(titles):  # panel titles: apart from each other and from every map
        for b in titles[i + 1 :] + maps:
            assert not a.overlaps(b), (i, a, b)
    assert fig._suptitle is not None, "no figure title: which episodes are drawn?"
    titles.append(fig._suptitle.get_window_extent(renderer))
    for i, box in enumerate(titles):  # on the page, and the figure's title above them all
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0, (i, box)
        assert box.y1 <= page.y1, (i, box)
        assert i == len(titles) - 1 or not box.overlaps(titles[-1]), (i, box)


def test_paths_png_says_which_episodes_it_draws_and_names_its_marks(paths_figure):
    fig = paths_figure
    assert "the first 6 of 8 episodes" in fig._suptitle.get_text()
    title = next(ax for ax in fig.axes if ax.images).title.get_text()
    assert title.startswith("episode 0") and "shortest" in title and "walked" in title, title
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    for name in ("start", "goal", "shortest path", "walked path"):
        assert name in labels, labels


def test_the_map_draws_the_start_and_the_shortest_path():
    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.nav.topdown import COLORS

    env = gymnasium.make("pixelrl/PointNav-v0", num_scenes=1, scene_seed=3, width=32, height=32)
    env.reset(seed=0)
    image = env.unwrapped.topdown(scale=3, shortest=True)
    env.close()
    for name in ("start", "shortest path", "goal"):
        assert (image == COLORS[name]).all(-1).sum() > 3, name


# -- pixelrl view: the caption says the task ---------------------------------------------------


def test_gif_captions_show_the_instruction(data, monkeypatch):
    from pixelrl.envs.recording import view
    from pixelrl.envs.recording.dataset import EpisodeDataset

    dataset = EpisodeDataset(data / "demos")
    instruction = str(dataset.steps(0)["instruction"].iloc[0])
    assert instruction
    captions: list[list[str]] = []
    add = view.add_caption
    monkeypatch.setattr(
        view, "add_caption", lambda image, lines: captions.append(lines) or add(image, lines)
    )
    images = view.render_episode(dataset, 0)
    assert len(captions) == len(images) == 2  # one step: before it, and the end
    for lines in captions:
        assert f"task: {instruction}" in lines, lines


def test_a_long_caption_line_wraps_inside_the_frame():
    from pixelrl.envs.recording.view import _font, wrap_to_width

    font = _font(12)
    text = "Select mY8 and click Submit, then type the word " * 4 + "x" * 80
    lines = wrap_to_width(text, font, 300)
    assert len(lines) > 4 and all(font.getlength(line) <= 300 for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


# -- pixelrl read --lines ----------------------------------------------------------------------


def test_words_side_by_side_are_one_line_and_a_wide_gap_starts_another():
    from pixelrl.vision.reader import Word, group_lines

    words = [Word("Last", (10, 10, 40, 24), 0.9), Word("name:", (45, 10, 85, 24), 0.8),
             Word("John", (300, 11, 330, 25), 0.95), Word("Smith", (335, 11, 375, 25), 0.9),
             Word("Email", (10, 40, 45, 54), 0.9)]  # fmt: skip
    lines = group_lines(words)
    assert [line.text for line in lines] == ["Last name:", "John Smith", "Email"]
    assert lines[0].box == (10, 10, 85, 24) and lines[0].score == 0.8


def test_read_lines_prints_a_form_a_line_of_text_at_a_time(tmp_path, capsys):
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    from PIL import Image, ImageDraw

    from pixelrl.cli import main
    from pixelrl.envs.desktop.render import font

    image = Image.new("RGB", (640, 120), (255, 255, 255))
    pen = ImageDraw.Draw(image)
    for y, label, value in (
        (20, "Last name:", "John Smith"),
        (70, "Email address:", "jo@example.org"),
    ):
        pen.text((20, y), label, fill=0, font=font(16))
        pen.text((330, y), value, fill=0, font=font(16))
    image.save(tmp_path / "form.png")
    assert main(["read", str(tmp_path / "form.png"), "--lines"]) == 0
    texts = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert texts == ["Last name:", "John Smith", "Email address:", "jo@example.org"], texts
