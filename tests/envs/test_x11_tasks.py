"""X11 task files: the shipped ones load and register; a broken one names its file and field."""

from __future__ import annotations

import json

import gymnasium
import pytest

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.gui_action import parse_action
from pixelrl.envs.x11.tasks import (
    TaskError,
    check,
    load_task,
    parse_task,
    resolve_task,
    substitute,
    task_files,
)

GOOD = {
    "id": "Example",
    "instruction": "Do it.",
    "config": [{"type": "launch", "command": ["xcalc"], "window": "^Calculator$"}],
    "evaluator": {
        "result": {"type": "file", "path": "{workdir}/x"},
        "func": "exact_match",
        "expected": "1",
    },
}


def test_shipped_tasks_load_register_and_have_parsable_solutions():
    files = task_files()
    assert len(files) >= 6
    for path in files:
        task = load_task(path)
        assert task.id == path.stem
        assert f"pixelrl/XDesktop-{task.id}-v0" in gymnasium.registry
        assert task.solution, f"{path} ships no scripted solution"
        for text in task.solution:
            parse_action(text, (1280, 800))


@pytest.mark.parametrize(
    "change, where",
    [
        ({"id": "bad id"}, "id"),
        ({"instruction": ""}, "instruction"),
        ({"instruction": "Type \u00e9t\u00e9"}, "instruction"),
        ({"config": [{"type": "teleport"}]}, "config[0].type"),
        ({"config": [{"type": "launch", "command": "xcalc -geometry +0+0"}]}, "config[0].command"),
        (
            {"evaluator": {"result": {"type": "file"}, "func": "exact_match", "expected": "1"}},
            "evaluator.result",
        ),
        ({"evaluator": {**GOOD["evaluator"], "func": "eval"}}, "evaluator.func"),
        ({"max_steps": 0}, "max_steps"),
        ({"surprise": 1}, "unknown field"),
    ],
)
def test_broken_task_names_the_field(change, where):
    with pytest.raises(TaskError, match="broken.json") as err:
        parse_task({**GOOD, **change}, "broken.json")
    assert where in str(err.value)


def test_load_task_errors_name_the_file(tmp_path):
    bad = tmp_path / "Bad.json"
    bad.write_text("{not json")
    with pytest.raises(TaskError, match="Bad.json: not valid JSON"):
        load_task(bad)
    with pytest.raises(TaskError, match="unknown X11 task 'NoSuchTask'"):
        resolve_task("NoSuchTask")
    good = tmp_path / "Good.json"
    good.write_text(json.dumps(GOOD))
    assert resolve_task(str(good)).id == "Example"


def test_checkers_and_placeholders():
    assert check("exact_match", " 42\n", "42", {})
    assert not check("exact_match", None, "42", {})
    assert check("number_match", "42.0", 42, {})
    assert not check("number_match", "forty-two", 42, {})
    assert check("contains", "hello pixelrl", "pixel", {})
    assert check("regex_match", "counter: 3", r"^counter: \d$", {})
    assert check("json_match", '{"a": 1, "b": 2}', {"a": 1}, {})
    assert not check("json_match", '{"a": 2}', {"a": 1}, {})
    assert substitute({"p": ["{workdir}/f", "{x}"]}, {"workdir": "/w"}) == {"p": ["/w/f", "{x}"]}
