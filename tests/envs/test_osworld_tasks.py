"""OSWorld task files: the schema as it is loads, what cannot run here is refused at load with
every part listed, and the metrics mean what OSWorld's mean (no display needed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from pixelrl.envs.x11.osworld import (
    OSWORLD_TASK_DIR,
    metric,
    reason_counts,
    survey,
)
from pixelrl.envs.x11.tasks import (
    TaskError,
    UnsupportedTaskError,
    load_task,
    parse_task,
    task_files,
)

# The shape of a real OSWorld task file (os domain), written here, not copied.
OS_TASK = {
    "id": "0f8a3b2c-1111-4a4a-9b9b-123456789abc",
    "snapshot": "os",
    "instruction": "Create a folder named test on the Desktop.",
    "source": "https://example.org/question",
    "trajectory": "trajectories/",
    "config": [
        {
            "type": "execute",
            "parameters": {
                "command": ["python", "-c", "import time; time.sleep(0.1)"],
            },
        }
    ],
    "related_apps": ["os"],
    "evaluator": {
        "func": "exact_match",
        "result": {
            "type": "vm_command_line",
            "command": "[ -d ~/Desktop/test ] && echo 'Directory exists.'",
            "shell": True,
        },
        "expected": {"type": "rule", "rules": {"expected": "Directory exists.\n"}},
    },
}


def test_an_osworld_task_loads_as_it_is():
    task = parse_task(OS_TASK, "os.json")
    assert task.schema == "osworld" and task.id == OS_TASK["id"] and task.max_steps == 15
    assert task.related_apps == ["os"]
    assert task.config == [
        {"type": "execute", "command": OS_TASK["config"][0]["parameters"]["command"]}
    ]
    assert task.evaluator["func"] == ["exact_match"] and task.evaluator["conj"] == "and"
    assert task.evaluator["expected"] == [OS_TASK["evaluator"]["expected"]]
    assert task.evaluator["postconfig"] == [] and task.evaluator["options"] == [{}]


def test_every_unsupported_part_is_refused_at_load_in_one_message():
    task = json.loads(json.dumps(OS_TASK))
    task["config"] = [
        {"type": "download", "parameters": {"files": [{"url": "https://x", "path": "a"}]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://x"]}},
        {
            "type": "execute",
            "parameters": {"command": "echo password | sudo -S apt-get install x", "shell": True},
        },
        {"type": "launch", "parameters": {"command": ["gimp"]}},
    ]
    task["evaluator"] = {
        "postconfig": [{"type": "download", "parameters": {"files": []}}],
        "func": ["compare_table", "exact_match"],
        "result": [
            {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
            {"type": "vm_terminal_output"},
        ],
        "expected": [
            {"type": "cloud_file", "path": "https://x", "dest": "b"},
            {"type": "rule", "rules": {"expected": "x"}},
        ],
    }
    with pytest.raises(UnsupportedTaskError) as e:
        parse_task(task, "t.json")
    message = str(e.value)
    assert message.startswith("t.json: cannot run here (8 part(s))")
    for part in [
        "config[0]: step 'download'",
        "config[1]: step 'chrome_open_tabs': drives Chrome over CDP",
        "config[2]: runs sudo",
        "config[3]: 'gimp' is not installed here",
        "evaluator.func[0]: metric 'compare_table' not implemented here",
        "evaluator.result[1]: getter 'vm_terminal_output'",
        "evaluator.expected[0]: getter 'cloud_file': fetches a URL",
        "evaluator.postconfig[0]: step 'download'",
    ]:
        assert part in message, part
    assert isinstance(e.value, TaskError)  # the CLI's one-line user error
    reasons = Counter(r.reason for r in e.value.refusals)
    assert reasons["step download"] == 2 and reasons["needs root (sudo)"] == 1


def test_a_task_without_a_metric_and_an_infeasible_one():
    empty = {**OS_TASK, "evaluator": {"func": "", "result": {}, "expected": {}}}
    with pytest.raises(UnsupportedTaskError, match="no metric"):
        parse_task(empty)
    infeasible = {**OS_TASK, "evaluator": {"func": "infeasible"}}
    assert parse_task(infeasible).evaluator["func"] == ["infeasible"]


def test_rule_expected_compares_the_rule_not_its_text():
    # Before: accepted with exact_match, then compared against str(dict) (always False), and
    # number_match crashed at evaluation with a TypeError.
    assert metric("exact_match", "yes\n", {"expected": "yes\n"}, {}) == 1.0
    assert metric("exact_match", "no\n", {"expected": "yes\n"}, {}) == 0.0
    assert metric("exact_match", str({"expected": "yes"}), {"expected": "yes"}, {}) == 0.0
    native = {
        "id": "Native",
        "instruction": "x",
        "config": [],
        "evaluator": {
            "result": {"type": "file", "path": "/x"},
            "func": "number_match",
            "expected": {"a": 1},
        },
    }
    with pytest.raises(TaskError, match="number_match expects a"):
        parse_task(native, "n.json")
    native["evaluator"]["expected"] = "forty"
    with pytest.raises(TaskError, match="number_match expects a"):
        parse_task(native, "n.json")


@pytest.mark.parametrize(
    "func, result, expected, options, score",
    [
        ("check_include_exclude", "a b c", {"include": ["a", "c"], "exclude": ["d"]}, {}, 1.0),
        ("check_include_exclude", "a b d", {"include": ["a"], "exclude": ["d"]}, {}, 0.0),
        ("check_include_exclude", None, {"include": []}, {}, 0.0),
        ("match_in_list", "b", {"expected": ["a", "b"]}, {}, 1.0),
        ("match_in_list", "c", {"expected": ["a", "b"]}, {}, 0.0),
        ("is_in_list", "x notes.md y", {"expected": "notes.md"}, {}, 1.0),
        ("is_in_list", ["a", "b"], {"expected": "b"}, {}, 1.0),
        ("is_in_list", ["a"], {"expected": "b"}, {}, 0.0),
        ("literal_match", "Hello", "hello", {"ignore_case": True}, 1.0),
        ("literal_match", "Hello", "hello", {}, 0.0),
        ("literal_match", ["A", 1], ["a", "1"], {"type": "list", "ignore_case": True}, 1.0),
        ("literal_match", "[1, 2]", [1, 2], {"type": "list"}, 1.0),
        ("fuzzy_match", "this is a test", {"expected": "this is a test!"}, {}, 28 / 29),
        ("fuzzy_match", "abc", {"expected": "abc"}, {}, 1.0),
        ("check_direct_json_object", "{'a': 1, 'b': 2}", {"expected": {"a": 1}}, {}, 1.0),
        ("check_direct_json_object", '{"a": 2}', {"expected": {"a": 1}}, {}, 0.0),
        ("check_direct_json_object", "not json", {"expected": {"a": 1}}, {}, 0.0),
        (
            "check_direct_json_object",
            {"city": "Hong Kong, China", "tags": ["x", "y"]},
            {"expected": {"city": "Hong Kong", "tags": ["y"]}, "expect_in_result": True},
            {},
            1.0,
        ),
        ("compare_text_file", "a\n b\n", "a b", {"ignore_blanks": True}, 1.0),
        ("compare_text_file", "a\nb\n", "a b", {}, 0.0),
        ("compare_text_file", "A", "a", {"ignore_case": True}, 1.0),
        ("compare_text_file", None, "a", {}, 0.0),
        ("diff_text_file", "a\nb\n", "a\nc\n", {}, 0.5),
    ],
)
def test_metrics_mean_what_osworld_means(func, result, expected, options, score):
    assert metric(func, result, expected, options) == pytest.approx(score)


def test_the_shipped_tasks_load_and_cover_the_steps_getters_and_metrics():
    files = task_files(OSWORLD_TASK_DIR)
    assert len(files) >= 10
    steps, getters, metrics = set(), set(), set()
    for path in files:
        task = load_task(path)
        assert task.schema == "osworld" and task.id == path.stem and task.solution
        steps |= {s["type"] for s in task.config}
        if task.evaluator["postconfig"]:
            steps.add("postconfig")
        steps |= {s["type"] for s in task.evaluator["postconfig"]}
        getters |= {g["type"] for g in task.evaluator["result"] + task.evaluator["expected"] if g}
        metrics |= set(task.evaluator["func"])
    assert steps >= {
        "execute",
        "command",
        "launch",
        "open",
        "activate_window",
        "sleep",
        "postconfig",
    }
    assert getters >= {"vm_command_line", "vm_file", "rule"}
    assert metrics >= {
        "exact_match",
        "check_include_exclude",
        "match_in_list",
        "is_in_list",
        "literal_match",
        "fuzzy_match",
        "check_direct_json_object",
        "compare_text_file",
        "infeasible",
    }


def test_survey_counts_reasons_once_per_task(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps(OS_TASK))
    bad = {**OS_TASK, "config": [{"type": "download", "parameters": {"files": []}}] * 2}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "junk.json").write_text("{")
    verdicts = survey(tmp_path)
    assert [v.runs for v in verdicts] == [True, False, False]
    assert reason_counts(verdicts) == {"not a task file": 1, "step download": 1}


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "pixelrl", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_tasks_check_lists_what_runs_and_why_not(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps(OS_TASK))
    bad = {**OS_TASK, "config": [{"type": "download", "parameters": {"files": []}}] * 2}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    run = run_cli("tasks", "check", str(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "runs     good.json" in lines
    assert "refused  bad.json: step 'download': downloads a URL (no network here) (x2)" in lines
    assert "1 of 2 task files would run here; 1 refused" in run.stdout
    assert "      1  step download" in lines


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["tasks", "check", "/no/such/folder"],
            "pixelrl tasks: error: /no/such/folder: no such folder",
        ),
        (["tasks"], "pixelrl tasks: error: say what to do: `pixelrl tasks check FOLDER`"),
    ],
)
def test_cli_tasks_user_errors_are_one_line(args, message):
    run = run_cli(*args)
    assert run.returncode == 2 and run.stderr.strip() == message
