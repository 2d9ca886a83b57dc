"""The task adapter: what a domain gives the text-policy trainer, small and exact.

An adapter is built from a recipe's config (``Adapter(cfg)``; a value no run can use is a
:class:`~pixelrl.config.ConfigError` there, before any run folder) and answers:

- ``codec()``: the action language (:mod:`pixelrl.vision.action_codec`);
- ``corpus()``: a tiny model's tokenizer texts (None: the codec's default);
- ``evaluator()``: the held-out evaluation, an :class:`Evaluation`;
- ``validator()``: the validation check (training-side items the run does not train on, never
  the held-out ones), an :class:`Evaluation` whose ``run`` is None when the domain has none;
  the loops keep the best-validated weights and stop early on it (:mod:`.best`);
- ``examples(run, policy)``: SFT demonstrations, :class:`~pixelrl.rl.text.rows.Example`\\ s
  (recorded into the run folder when the config names none);
- ``save(policy, folder)``: the trained model as its users load it;
- one-step GRPO: ``prompts()`` (the training items), ``prompt(item)`` and
  ``rewards(item, texts)``;
- multi-turn GRPO: ``play(policy, step, rng, gcfg)`` -> ``(episodes, groups)`` (the step's
  :class:`~pixelrl.rl.text.rows.Episode`\\ s, each with its group: the same start), the
  ``step_row(episodes)`` it reports, and ``close()`` for what it keeps open.

``GROUPS_PER_STEP`` (optional) names the config key holding how many groups ``play`` plays a
step (e.g. ``"grpo.starts_per_step"``): under torchrun each rank plays its share of them, and
``play`` gets the share's number ``step x W + rank`` as its step (:mod:`.parallel`).

``RECIPES`` maps each recipe name of the domain to the loop that runs it (``sft``, ``grpo``,
``multiturn``). A toy adapter in the tests trains through the same loops with no change to
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Evaluation:
    """A held-out evaluation: ``run(policy)`` gives a row with ``measure`` (and ``ci_low``,
    ``ci_high``, ``n``); ``run`` None: the recipe evaluates nothing (no held-out episodes)."""

    measure: str
    run: Callable[[Any], dict[str, float]] | None

    def add(self, run_folder, step: int, policy) -> None:
        """Evaluate ``policy`` and keep the row in the run folder (nothing when disabled)."""
        if self.run is not None:
            run_folder.add_eval(step, self.run(policy))


class TaskAdapter(Protocol):
    """What :mod:`pixelrl.rl.text` asks of a domain (see the module doc); the one-step and
    multi-turn methods are needed only by the recipes ``RECIPES`` sends to those loops."""

    RECIPES: dict[str, str]

    def codec(self) -> Any: ...

    def corpus(self) -> list[str] | None: ...

    def evaluator(self) -> Evaluation: ...

    def validator(self) -> Evaluation: ...

    def examples(self, run, policy) -> list: ...

    def save(self, policy, folder) -> None: ...

    def prompts(self) -> list: ...

    def prompt(self, item) -> Any: ...

    def rewards(self, item, texts: list[str]) -> Any: ...

    def play(self, policy, step: int, rng, gcfg) -> tuple[list, list]: ...

    def step_row(self, episodes: list) -> dict[str, float]: ...

    def close(self) -> None: ...
