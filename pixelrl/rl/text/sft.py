"""SFT of a text policy: the adapter's demonstrations, the token-level NLL, validation and
held-out checks.

policy   = the config's model, speaking the adapter's codec
examples = adapter.examples(run, policy)          # recorded on the spot if none are named
for step in 1..sft.steps:  a batch of examples, one gradient step of the answers' NLL
    (the rate: sft.lr_schedule after a sft.warmup_ratio share of warm-up)
evaluate at 0; validate and evaluate every eval.interval steps and at the end:
    the best-validated weights are kept; eval.patience checks without a better one: stop
save the kept model (the last one when the adapter has no validation set)
"""

from __future__ import annotations

from typing import Any

from pixelrl.config import Config, ConfigError
from pixelrl.rl.text.adapter import TaskAdapter
from pixelrl.rl.text.best import Validation
from pixelrl.rl.text.policy import load_text_policy
from pixelrl.run_folder import Run


def due(step: int, interval: int, steps: int) -> bool:
    """Whether a held-out evaluation runs after ``step``: at 0, every ``interval`` and at the end."""
    return step in (0, steps) or bool(interval and step % interval == 0)


def run_sft(cfg: Config, adapter: TaskAdapter) -> dict[str, Any]:
    from pixelrl.rl.sft import sft_loop

    run = Run(cfg)
    evaluate = adapter.evaluator()
    validation = Validation(adapter.validator(), int(cfg.eval.patience))
    policy = load_text_policy(cfg, adapter.codec(), adapter.corpus)
    examples = adapter.examples(run, policy)
    if not examples:
        raise ConfigError(f"{cfg.recipe} has nothing to learn from: no demonstrations")
    steps, interval = int(cfg.sft.steps), int(cfg.eval.interval)
    evaluate.add(run, 0, policy)  # (no validation of the untrained model: never the one kept)

    def after_step(step: int, loss: float) -> bool:
        run.history.append({"step": step, "loss": loss})
        if not due(step, interval, steps):
            return False
        stop = validation.check(run, step, policy)
        evaluate.add(run, step, policy)
        return stop

    sft_loop(policy, examples, steps, int(cfg.sft.batch_size), float(cfg.sft.lr),
             float(cfg.sft.weight_decay), int(cfg.seed), cfg.recipe.split("/")[-1],
             bool(cfg.train.progress), after_step, str(cfg.sft.lr_schedule),
             float(cfg.sft.warmup_ratio))  # fmt: skip
    validation.restore(policy)
    adapter.save(policy, run.dir / "model")
    run.write(evaluate.measure)
    return {"run_dir": str(run.dir), "examples": len(examples), "eval": run.evals,
            **validation.summary()}  # fmt: skip
