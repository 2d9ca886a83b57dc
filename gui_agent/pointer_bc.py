"""Behaviour cloning of the pixel pointer policy from the scripted expert (a warm start for PPO).

:func:`expert_samples` plays the desktop expert in :class:`~pixelrl.gui_agent.pointer_env.PointerEnv`
and keeps each step's observation with the expert's action encoded as the policy's
``MultiDiscrete`` sample (:func:`~pixelrl.gui_agent.pointer_env.encode_action`; steps the spec cannot
express are skipped and the expert's action is played anyway) and the grid cells inside the
target's box (and in the boxes of the expert's equally good alternatives, such as the other
wrong checkboxes). :func:`behaviour_clone` then minimises the negative log-likelihood of the expert's
kind, text and key, and of clicking anywhere in the target box
(:meth:`PointerPolicy.box_log_likelihood`): any in-box point (cell and sub-cell offset) is as
right as the expert's centre.

Each sample also keeps the words drawn on its screen and where (:func:`screen_words`, from the
a11y tree): with ``reading`` > 0, behaviour cloning also asks the match maps to find each of
them. That is dense supervision of the skill the task needs most, reading labels: a screen of
seven buttons teaches seven words, not just the one the expert clicks.

Two more losses use the same words. ``named`` > 0: match map 0 should say, on every cell that
shows a word, whether the instruction names it (reading each word is not enough when the maps
take the best of many words' uncalibrated scores). ``each_target`` > 0: every equally good
target (each wrong checkbox) should outscore the rest of the screen, not only their sum.

``pixelrl train gui/ppo policy.init=PATH`` starts PPO from a saved state dict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

READ_WORDS = 16  # screen words kept per sample for the reading loss
# earlier expert actions kept per sample (+ 1 encoded, newest first, zeros before the episode's
# first): the memory a policy with ``memory: actions`` is cloned with (PointerPolicy.history_state)
LAST_ACTIONS = 8
# what each sample holds beside its observation (:func:`expert_samples`, :func:`save_samples`)
SAMPLE_KEYS = ("action", "point_mask", "read_ids", "read_cells", "last_actions", "stop_weight")


class SampleColumns:
    """The columns of :func:`expert_samples`' result, filled a recorded step at a time."""

    def __init__(self, env, click_margin: float = 0.0) -> None:
        self.env, self.click_margin = env, click_margin
        self.observed: dict[str, list] = {key: [] for key in env.pointer_spec.observation_keys}
        self.rows: dict[str, list] = {key: [] for key in SAMPLE_KEYS}

    def __len__(self) -> int:
        return len(self.rows["action"])

    def add(self, obs, info, sample: np.ndarray, history: np.ndarray) -> np.ndarray:
        """Keep the step of ``obs`` (and its ``info``) labelled ``sample``, after the earlier
        actions ``history``; returns its point mask (the points as right as the label's)."""
        env = self.env
        for key, rows in self.observed.items():
            rows.append(obs[key])
        # the desktop says where its target is in info; MiniWoB's oracle with its action
        web = env.unwrapped
        target = info.get("target_bbox", getattr(web, "expert_target_bbox", None))
        others = getattr(web, "expert_alternative_bboxes", ())
        boxes = [target, *info.get("alternative_bboxes", others)]
        mask = box_points(boxes, sample, env.pointer_spec, env.image_map, self.click_margin)
        ids, cells = screen_words(info.get("a11y", ()), env.pointer_spec, env.image_map)
        rows = self.rows
        rows["action"].append(sample)
        rows["point_mask"].append(mask)
        rows["read_ids"].append(ids)
        rows["read_cells"].append(cells)
        rows["last_actions"].append(history.copy())
        # a Submit after k ticks stands for the k-th "all ticked?" decision (1 elsewhere)
        rows["stop_weight"].append(max(1, int(getattr(web, "expert_closes_run", 0))))
        return mask

    def arrays(self) -> dict[str, np.ndarray]:
        out = {key: np.stack(rows) for key, rows in self.observed.items()}
        out.update({key: np.stack(rows) for key, rows in self.rows.items()})
        out["stop_weight"] = out["stop_weight"].astype(np.float64)
        return out


def expert_samples(
    env, count: int, seed: int = 0, progress: bool = False, click_margin: float = 0.0
) -> dict[str, np.ndarray]:
    """``count`` (observation, expert sample) pairs from a :class:`PointerEnv` (training seeds).
    ``click_margin``: target points must lie this many screen pixels inside the box
    (:func:`box_points`)."""
    from tqdm import tqdm

    from pixelrl.envs.families import expert_of
    from pixelrl.gui_agent.pointer_env import encode_action

    columns = SampleColumns(env, click_margin)
    history = np.zeros((LAST_ACTIONS, len(env.action_space.nvec)), dtype=np.int64)
    obs, info = env.reset(seed=seed)
    scripted = expert_of(env)  # the env's task family's expert
    scripted.reset()
    bar = tqdm(total=count, desc="expert samples", disable=not progress)
    try:  # the bar is closed before an error line (a kind the policy lacks) is printed
        while len(columns) < count:
            expert = scripted.act()
            sample = encode_action(expert, env.pointer_spec, env.image_map, env.fields)
            if sample is None:
                refuse_unplayable(expert, env)  # unless the step may be skipped (a wait)
            else:
                columns.add(obs, info, sample, history)
                history = np.concatenate([sample[None] + 1, history[:-1]])  # what a policy played
                bar.update(1)
            obs, _, terminated, truncated, info = env.step_action(expert)
            if terminated or truncated:
                obs, info = env.reset()
                scripted.reset()
                history[:] = 0
    finally:
        bar.close()
    return columns.arrays()


def corrected_samples(
    env, act: Callable[[dict, np.ndarray], np.ndarray], episodes: int, seed: int = 0,
    click_margin: float = 0.0, patience: int = 3,
) -> dict[str, np.ndarray] | None:  # fmt: skip
    """DAgger's samples (Ross, Gordon & Bagnell 2011, arXiv:1011.0686): ``act(obs, history)``,
    the cloned policy (``history``: its earlier actions, as :func:`expert_samples` keeps them),
    plays ``episodes`` episodes of a :class:`PointerEnv` (seeds drawn from ``seed``), and each page it reaches
    is labelled with the expert's action there. Cloning from the expert's own episodes only
    shows the pages the expert reaches; a policy that strays once meets pages it was never
    shown (issue 54: social-media's list after paging, the menus and pies) and compounds the
    error. The expert must label any page (``relabels``: MiniWoB++'s replanned tasks) and
    hears what was played (``played``). An episode ends early after ``patience`` steps in a
    row where the policy does something else than the label (its next pages repeat the
    mistake), or where the expert cannot plan from the page (a ``ValueError``: OracleError).
    ``None`` when no step was labelled."""
    from pixelrl.envs.families import expert_of
    from pixelrl.gui_agent.pointer_env import encode_action

    scripted = expert_of(env)
    if not getattr(scripted, "relabels", False):
        raise ValueError(
            f"{env.spec.id if env.spec else env}: its expert cannot label pages it did not reach"
        )
    spec = env.pointer_spec
    kinds = list(spec.kinds)
    columns = SampleColumns(env, click_margin)
    for episode in range(episodes):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        scripted.reset()
        history = np.zeros((LAST_ACTIONS, len(env.action_space.nvec)), dtype=np.int64)
        wrong, done = 0, False
        while not done and wrong < patience:
            try:
                expert = scripted.act()
            except ValueError:  # no plan from this page: the episode teaches nothing more
                break
            label = encode_action(expert, spec, env.image_map, env.fields)
            played = np.asarray(act(obs, history))
            if label is not None:
                mask = columns.add(obs, info, label, history)
                wrong = 0 if agrees(played, label, mask, kinds) else wrong + 1
            obs, _, terminated, truncated, info = env.step(played)
            scripted.played(env.last_action)
            history = np.concatenate([played[None] + 1, history[:-1]])
            done = terminated or truncated
    return columns.arrays() if len(columns) else None


def agrees(played: np.ndarray, label: np.ndarray, mask: np.ndarray, kinds: list[str]) -> bool:
    """Whether a policy's sample does what the label does: the same kind, a point the label's
    mask holds (pointer kinds), the same text (``type``) or key (``key``)."""
    from pixelrl.gui_agent.pointer_env import POINTER_KINDS

    if played[0] != label[0]:
        return False
    kind = kinds[int(label[0])]
    if kind == "type":
        return played[3] == label[3]
    if kind == "key":
        return played[4] == label[4]
    if kind in POINTER_KINDS:
        return bool(mask[int(played[1]), int(played[2])])
    return True


# Expert actions cloning skips when the policy's kinds lack them: the end of an episode, and a
# pause that only lets the page move on (click-collapsible's wait while a section slides open).
SKIPPABLE_KINDS = ("done", "fail", "wait")


def refuse_unplayable(action, env) -> None:
    """A one-line ValueError when the expert plays an action of a kind the policy cannot take
    (a drag, a scroll) and that is not :data:`SKIPPABLE_KINDS`: cloning would drop the very
    steps the task needs and train a policy that cannot solve it."""
    from pixelrl.gui_agent.pointer_env import spec_kind

    spec = env.pointer_spec
    kind = spec_kind(action)
    if action.kind in SKIPPABLE_KINDS or kind in spec.kinds:
        return  # a kind the policy has (a text or key outside its vocabulary: skipped as before)
    task = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
    raise ValueError(
        f"{task}: its expert plays {kind or action.kind} actions, which policy.kinds "
        f"({', '.join(spec.kinds)}) cannot take; add {kind or action.kind!r} to policy.kinds"
        if kind
        else f"{task}: its expert plays {action.kind} actions, which no pointer policy kind takes"
    )


# Elements whose name is drawn inside their box (a window's is in its title bar, a text field's
# in the label beside it: those are left out). "text": a web page's text runs (MiniWoB++: a
# checkbox's label text, a link), which can be narrower than min_width and still be read.
READABLE_ROLES = ("button", "checkbox", "label", "taskbutton", "radio", "tab", "menuitem", "icon",
                  "text")  # fmt: skip


def screen_words(
    a11y, spec, image_map, max_words: int = READ_WORDS, min_width: int = 20
) -> tuple[np.ndarray, np.ndarray]:
    """The words drawn on the screen and where: hashed ids (``max_words``, 0 pads) and, per word,
    the grid cells whose centres lie in its element's box (``max_words``, cells), for the reading
    loss (:meth:`PointerPolicy.reading_log_likelihood`).

    Only visible elements of :data:`READABLE_ROLES` at least ``min_width`` screen pixels wide
    (the close button's "×" is not the word "Close"), and not under a window drawn later in the
    a11y list (the topmost window covers what is behind it)."""
    from pixelrl.gui_agent.pointer_env import hash_words, words_of

    ids = np.zeros((max_words, *spec.instruction_shape[1:]), dtype=np.int64)
    cells = np.zeros((max_words, spec.num_cells), dtype=bool)
    windows = [(i, e["bbox"]) for i, e in enumerate(a11y) if e["role"] == "window"]
    n = 0
    for i, e in enumerate(a11y):
        x0, y0, x1, y1 = e["bbox"]
        if e["role"] not in READABLE_ROLES or not e["state"].get("visible", True):
            continue
        if x1 - x0 < min_width and e["role"] != "text":
            continue
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        mine = e["state"].get("window")
        own = next((j for j, _ in windows if a11y[j]["name"] == mine), i)
        covered = any(j > own and wb[0] <= cx < wb[2] and wb[1] <= cy < wb[3] for j, wb in windows)
        if covered:
            continue
        inside = _grid_points_inside(e["bbox"], spec, image_map, per_cell=1)  # cell centres
        if not inside.any():
            continue
        for word in words_of(e["name"]):
            if n == max_words:
                return ids, cells
            ids[n] = hash_words(word, 1, spec.buckets, spec.subwords)[0]
            cells[n] = inside[:, 0]
            n += 1
    return ids, cells


def box_points(bboxes, sample: np.ndarray, spec, image_map, margin: float = 0.0) -> np.ndarray:
    """Bool (cells, S²): the pointer's points (cell, sub-cell offset; see
    :meth:`PointerSpec.image_point`) that lie in any of the screen boxes ``bboxes`` (None
    entries are skipped), always including the sample's own point (a box smaller than a
    sub-cell still has one).

    ``margin`` (screen pixels) shrinks each box on every side first, unless that leaves it no
    point: a policy taught that a point one pixel inside the edge is as right as the centre
    picks such points, and a sub-cell slip then lands outside (issue 5: most check-boxes
    failures were clicks 1-5 px above or below a box, repeated until the step limit)."""
    mask = np.zeros((spec.num_cells, spec.offsets**2), dtype=bool)
    for bbox in bboxes:
        if bbox is None:
            continue
        inside = np.zeros_like(mask)
        x0, y0, x1, y1 = bbox
        if margin > 0 and x1 - x0 > 2 * margin and y1 - y0 > 2 * margin:
            shrunk = (x0 + margin, y0 + margin, x1 - margin, y1 - margin)
            inside = _grid_points_inside(shrunk, spec, image_map, per_cell=spec.offsets)
        if not inside.any():
            inside = _grid_points_inside(bbox, spec, image_map, per_cell=spec.offsets)
        mask |= inside
    mask[int(sample[1]), int(sample[2])] = True
    return mask


def _grid_points_inside(bbox, spec, image_map, per_cell: int) -> np.ndarray:
    """Bool (cells, per_cell²): which of each grid cell's per_cell × per_cell points (at the
    sub-cell centres, as :meth:`PointerSpec.image_point` places them) lie in the screen box."""
    cols, rows = spec.grid
    x0, y0, x1, y1 = image_map.box_to_image(np.asarray(bbox, dtype=np.float64))
    fractions = (np.arange(per_cell) + 0.5) / per_cell
    xs = ((np.arange(cols)[:, None] + fractions[None]) * spec.cell).reshape(-1)  # col, ox
    ys = ((np.arange(rows)[:, None] + fractions[None]) * spec.cell).reshape(-1)  # row, oy
    inside = ((ys >= y0) & (ys < y1))[:, None] & ((xs >= x0) & (xs < x1))[None, :]
    # (row, oy, col, ox) -> (row, col, oy, ox): cell-major, offsets row-major inside a cell
    s = per_cell
    return inside.reshape(rows, s, cols, s).transpose(0, 2, 1, 3).reshape(spec.num_cells, -1)


def save_samples(path, data: dict[str, np.ndarray], about: dict[str, Any]) -> None:
    """Write samples (:func:`expert_samples`' format) to ``path`` (.npz), with ``about`` (what
    they were recorded for: tasks, count, seed) as JSON text beside them, for
    :func:`load_samples`. Written to a temporary name first: a killed run leaves no half file."""
    import json
    import os
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as f:
        # compressed: screenshots are mostly flat colour (~180 KB a sample as they stand)
        np.savez_compressed(f, **data, about=np.array(json.dumps(about, sort_keys=True)))
    os.replace(part, path)


def load_samples(path, spec, about: dict[str, Any]) -> dict[str, np.ndarray]:
    """The samples :func:`save_samples` wrote to ``path``, read as data (no pickles) and checked:
    recorded for the same ``about`` and shaped for ``spec`` (a :class:`PointerSpec`), each
    array one row a sample. Anything else is a one-line ValueError."""
    import json
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a samples file ({type(e).__name__}: {e})") from None
    try:
        theirs = json.loads(str(data.pop("about")))
    except (KeyError, ValueError):
        raise ValueError(f"{path}: not a samples file (no 'about' record)") from None
    if theirs != json.loads(json.dumps(about, sort_keys=True)):
        changed = sorted(k for k in {*theirs, *about} if theirs.get(k) != about.get(k))
        raise ValueError(
            f"{path} holds samples recorded for other settings ({', '.join(changed)}): "
            "delete it, or point policy.bc_data at another file"
        )
    w, h = spec.image_size
    want = {"image": (-1, h, w, 3), "instruction": (-1, *spec.instruction_shape)}
    if spec.reader:
        want["read"] = (-1, h, w, 2)
    want.update({"action": (-1, len(spec.nvec)), "point_mask": (-1, spec.num_cells, spec.offsets**2),
                 "read_ids": (-1, READ_WORDS, *spec.instruction_shape[1:]),
                 "read_cells": (-1, READ_WORDS, spec.num_cells),
                 "last_actions": (-1, LAST_ACTIONS, len(spec.nvec)), "stop_weight": (-1,)})  # fmt: skip
    rows = None
    for key, shape in want.items():
        have = data.get(key)
        if have is None or have.dtype == object or have.shape[1:] != shape[1:]:
            got = "missing" if have is None else f"{have.dtype} {have.shape}"
            raise ValueError(
                f"{path}: {key!r} should be (n, {', '.join(map(str, shape[1:]))}), got {got}"
            )
        if rows is not None and len(have) != rows:
            raise ValueError(f"{path}: {key!r} has {len(have)} rows, the others {rows}")
        rows = len(have)
    return {k: data[k] for k in want}


def behaviour_clone(
    policy,
    data: dict[str, np.ndarray],
    steps: int = 500,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = False,
    reading: float = 0.0,
    named: float = 0.0,
    each_target: float = 0.0,
    weigh_stops: bool = False,
    memory_dropout: float = 0.0,
    callback: Callable[[int, Any, list[float]], None] | None = None,
    every: int = 0,
    stop: Callable[[], str] | None = None,
) -> list[float]:
    """Adam on the negative log-likelihood of the expert samples; returns the loss per step.
    ``callback(step, policy, losses)`` runs after every ``every`` steps, ``losses`` being those
    so far (an evaluation for a learning curve; the policy is back in training mode afterwards).
    ``stop()``, asked before each step, ends the cloning early when it says why (a time limit:
    :meth:`pixelrl.rl.budget.Budget.clock`).

    The learning rate follows a cosine from ``lr`` down to 0 over ``steps`` (the last steps
    settle the heatmap on the target instead of jittering around it at full rate). ``reading``
    > 0 adds that weight times the reading loss (:func:`screen_words`: find every labelled
    element's word on the screen), averaged over the words present. ``named`` > 0 adds that
    weight times the named-element loss (``PointerPolicy.named_log_likelihood``: the first match
    map says which drawn words the instruction names); ``each_target`` > 0 that weight times the
    each-target loss (``PointerPolicy.each_target_log_likelihood``: every equally good target
    outscores the rest, not only their sum). Issue 5, check-boxes: 79-81% held-out success with
    reading alone, 95.0% / 92.5% (two seeds) with ``named=4, each_target=0.25`` as well.
    ``weigh_stops``: batches draw each sample in proportion to its ``stop_weight``
    (:func:`batch_indices`), so the Submit that closes k ticks counts as much as the ticks
    (issue 54: click-checkboxes-large's policy ticked one box too many, its click mass on the
    Submit button 0.00-0.20 in the "every named box ticked" state of the failed episodes).
    ``memory_dropout``: that share of samples has its earlier actions cut to a random shorter
    run (:func:`cut_memories`), as if the episode had begun later: a policy with memory should
    read what is done from the page, not count its own actions (a "copycat" shortcut of cloning
    from histories, Wen et al. 2020, arXiv:2010.14876, who remove it adversarially; this is the
    plain remedy. click-checkboxes-large's policy submitted after as many ticks as the sentence
    names, right or wrong, and after 8 ticks, all its memory holds, when it names 9-12).
    """
    import torch
    from tqdm import tqdm

    gen = np.random.default_rng(seed)
    policy.history_state(_last_actions(data, [0]))  # data without memory: one line, now
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, steps))
    policy.train()
    losses: list[float] = []
    n = len(data["action"])
    for step in tqdm(range(steps), desc="behaviour cloning", disable=not progress):
        if stop is not None and (reason := stop()):
            tqdm.write(f"behaviour cloning stopped after {step} of {steps} steps: {reason}")
            break
        idx = batch_indices(gen, n, batch_size, data.get("stop_weight") if weigh_stops else None)
        obs = {k: torch.as_tensor(data[k][idx]) for k in policy.spec.observation_keys}
        actions = torch.as_tensor(data["action"][idx])
        mask = torch.as_tensor(data["point_mask"][idx])
        # with memory: each step's earlier expert actions, as act would have carried them
        last = _last_actions(data, idx)
        if memory_dropout > 0 and last is not None:
            window = getattr(policy, "memory_actions", 0) or last.shape[1]
            last = torch.as_tensor(cut_memories(last.numpy(), memory_dropout, gen, window))
        heads = policy.heads(obs, policy.history_state(last))
        loss = -policy.box_log_likelihood(obs, actions, mask, heads=heads).mean()
        if each_target > 0:
            each = policy.each_target_log_likelihood(heads, actions, mask)
            loss = loss - each_target * each.mean()
        if reading > 0 or named > 0:  # the words drawn on each screen, and their cells
            ids = torch.as_tensor(data["read_ids"][idx])
            cells = torch.as_tensor(data["read_cells"][idx])
        if reading > 0:
            read = policy.reading_log_likelihood(heads["features"], ids, cells)
            loss = loss - reading * read.sum() / (ids > 0).sum().clamp(min=1)
        if named > 0:
            said = policy.named_log_likelihood(heads, obs["instruction"], ids, cells)
            loss = loss - named * said.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if callback is not None and every > 0 and len(losses) % every == 0:
            callback(len(losses), policy, losses)
            policy.train()
    return losses


def batch_indices(gen, n: int, batch_size: int, weights: np.ndarray | None = None) -> np.ndarray:
    """A batch of distinct sample indices, uniform, or in proportion to ``weights`` (n,)."""
    p = None if weights is None else weights / weights.sum()
    return gen.choice(n, min(batch_size, n), replace=False, p=p)


def cut_memories(last: np.ndarray, share: float, gen, window: int) -> np.ndarray:
    """``last`` (B, K, A), newest first, with ``share`` of its rows cut: each such row keeps its
    newest ``j`` actions, ``j`` drawn from 0 .. ``window`` - 1, and zeros after them (what an
    episode that began ``j`` steps ago remembers)."""
    cut = last.copy()
    for row in np.flatnonzero(gen.random(len(last)) < share):
        cut[row, gen.integers(0, window) :] = 0
    return cut


def _last_actions(data: dict[str, np.ndarray], idx):
    """The samples' earlier actions as a tensor, or ``None`` when the data has none."""
    import torch

    return torch.as_tensor(data["last_actions"][idx]) if "last_actions" in data else None


def accuracy(policy, data: dict[str, np.ndarray], batch_size: int = 64) -> dict[str, Any]:
    """Share of samples where the policy's most likely kind matches the expert's, and where
    both kind and point do (``cell``: the greedy point lies in the target box)."""
    import torch

    policy.eval()
    kind_ok, cell_ok = [], []
    with torch.no_grad():
        for s in range(0, len(data["action"]), batch_size):
            obs = {
                k: torch.as_tensor(data[k][s : s + batch_size])
                for k in policy.spec.observation_keys
            }
            state = policy.history_state(_last_actions(data, slice(s, s + batch_size)))
            pred = policy.act(obs, state, deterministic=True).actions.numpy()
            want = data["action"][s : s + batch_size]
            in_box = data["point_mask"][s : s + batch_size][
                np.arange(len(pred)), pred[:, 1], pred[:, 2]
            ]
            kind_ok.extend(pred[:, 0] == want[:, 0])
            cell_ok.extend((pred[:, 0] == want[:, 0]) & in_box)
    return {"kind": float(np.mean(kind_ok)), "cell": float(np.mean(cell_ok))}
