"""Grounding data of the GUI text-policy recipes (:mod:`pixelrl.gui_agent.train_vlm`): SFT examples
that click every uniquely named element of a screen, held-out grounding accuracy, and one step of
``gui/grounding-grpo`` on grounding prompts (:func:`grounding_grpo_step`, what the benchmarks time).

Both read screens and their accessibility trees (``info["a11y"]``); which screens (the training
seeds of ``env.families``, the held-out grounding set) is the recipe's choice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pixelrl.rl.text.heldout import evaluating
from pixelrl.rl.text.rows import Example, Prompt


def grounding_examples(screens: Iterable[tuple[Any, dict, dict]], policy,
                       screen: tuple[int, int]) -> list[Example]:  # fmt: skip
    """SFT examples that point at every uniquely named element (``Click the "Stop" button.``) of
    each ``(family, obs, info)`` of ``screens``: many instructions per screen, so the model must
    read the instruction to know where to click.

    With mark actions (``prompt.mark_actions``) a target names the mark of the prompt's screen
    parse whose click lands in the element's box (``click(mark=7)``); an element with no such
    mark (a checkbox whose label is beside it, an empty field) keeps its point, and the count
    of those is printed."""
    from pixelrl.envs.grounding import grounding_samples
    from pixelrl.envs.gui import bbox_center
    from pixelrl.envs.gui_action import Action
    from pixelrl.vision.pointer_head import POINTER_TOKEN

    codec = policy.codec
    marked = getattr(codec, "mark_actions", False)
    examples, named = [], 0
    for _, obs, info in screens:
        boxes = policy.screen_parse.boxes(obs["screenshot"]) if marked else None
        for sample in grounding_samples(info["a11y"], screen):
            centre = bbox_center(sample.bbox)
            click, box = Action.click(*centre), None
            if marked:
                target, by_mark = codec.render_target(click, screen, boxes, sample.bbox)
                named += by_mark
            else:
                target = policy.action_text(click, screen)
            if policy.pointer is not None:  # the click's point is the pointer head's: the box
                point = codec.point_text(*centre, screen)
                target, box = target.replace(point, POINTER_TOKEN), tuple(sample.bbox)
            examples.append(Example(Prompt(obs["screenshot"], sample.instruction), target, box=box))
    if marked:
        print(f"grounding targets: {named} of {len(examples)} name a mark, "
              f"{len(examples) - named} keep their point (no mark inside the target box)")  # fmt: skip
    return examples


def pointing_clash(head: str, marks: str) -> str:
    """The error line for a pointer head (``head``: how the user asked for it) with mark
    actions (``marks``). Both name a click's point, and :func:`grounding_examples` gives the
    head a target only where no mark lies in the box: about 1 example in 5 on the grounding
    families (47 of 250 in docs/results/vlm_pointer.md), so the head would barely learn."""
    return (f"{head} with {marks}: two ways to name a click's point (the pointer head's image "
            "cell, a mark's number); grounding targets would name a mark wherever one lies in "
            "the target box, leaving the head about 1 example in 5: use one of them")  # fmt: skip


def mark_points(cfg, codec, screenshot, texts: list[str], screen: tuple[int, int]) -> list[str]:
    """``texts`` with each mark action written as the click it resolves to against the screen
    parse of ``screenshot`` (the prompt's, numbered as the prompt showed), so that the grounding
    rewards, which read points, score a mark by where it clicks."""
    from pixelrl.rl.text.policy import screen_parse

    boxes = screen_parse(cfg, codec).boxes(screenshot)
    return [codec.resolved(t, screen, boxes) for t in texts]


def grounding_accuracy(policy, items, max_new_tokens: int) -> dict[str, float]:
    """Greedy clicks on the grounding ``items``: accuracy with its 95% interval and ``n``, then
    each family's accuracy when there are several."""
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_grounding

    with evaluating(policy):
        rows = evaluate_grounding(VLMAgent(policy, max_new_tokens), items, progress=False)
    overall = rows[-1]
    per_family = {r["family"]: r["accuracy"] for r in rows[:-1]} if len(rows) > 1 else {}
    return {**{k: overall[k] for k in ("accuracy", "ci_low", "ci_high", "n")}, **per_family}


def grounding_grpo_step(policy, opt, lr: float, ref, prompts, gcfg, reward_fn, screen,
                        sigma_scale: float, minibatch: int) -> dict[str, float]:  # fmt: skip
    """One step of ``gui/grounding-grpo`` on ``prompts`` (``GroundingItem``\\ s): the trainer's
    :func:`pixelrl.rl.text.grpo.one_step`, which ``bench/grpo_vs_trl.py`` times against TRL's
    ``GRPOTrainer``."""
    from pixelrl.rl.text.grpo import one_step

    return one_step(
        policy, opt, lr, ref, [Prompt(p.screenshot, p.instruction) for p in prompts],
        lambda i, texts: reward_fn(texts, [prompts[i].bbox] * len(texts), screen, sigma_scale),
        gcfg, minibatch,
    )  # fmt: skip
