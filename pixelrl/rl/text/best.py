"""The validation check of a training run: the best weights kept, and patience.

``Validation(evaluation, patience)`` runs the adapter's validation evaluation (episodes on
training-side scenes the run does not train on; never the held-out test ones) when the loop
asks, keeps a copy of the weights whenever its measure beats every earlier one, and says when
``patience`` checks in a row brought nothing better (early stopping). Checks up to step ``grace``
(the learning rate's warm-up) keep weights but do not count towards patience: a run's measure
often dips while its rate rises, and stopping there ends it before it learned anything. At the
end the loop puts the best weights back, so the run's ``model/`` is its best-validated model.
With no validation set (``evaluation.run`` None) it keeps nothing and never stops a run.
"""

from __future__ import annotations

from pixelrl.rl.text.adapter import Evaluation
from pixelrl.rl.text.parallel import checkpointed


class Validation:
    def __init__(self, evaluation: Evaluation, patience: int = 0, grace: int = 0) -> None:
        self.evaluation, self.patience, self.grace = evaluation, int(patience), int(grace)
        self.best: float | None = None  # the best measure so far
        self.best_step: int | None = None
        self.weights: dict | None = None  # a copy of the best model's state
        self.since_best = 0  # checks in a row without a better measure

    @property
    def enabled(self) -> bool:
        return self.evaluation.run is not None

    def check(self, run, step: int, policy) -> bool:
        """Validate ``policy`` after ``step``, keep its weights if best; True: stop the run."""
        if not self.enabled:
            return False
        row = self.evaluation.run(policy)
        run.add_validation(step, row)
        value = float(row[self.evaluation.measure])
        if self.best is None or value > self.best:
            self.best, self.best_step, self.since_best = value, step, 0
            kept = checkpointed(policy).state_dict()  # the model's, and a pointer head's
            self.weights = {k: v.detach().clone() for k, v in kept.items()}
            return False
        if step > self.grace:
            self.since_best += 1
        return bool(self.patience) and self.since_best >= self.patience

    def restore(self, policy) -> bool:
        """Load the best weights into ``policy`` (False: none kept)."""
        if self.weights is None:
            return False
        checkpointed(policy).load_state_dict(self.weights)
        return True

    def state_dict(self) -> dict:
        """What a checkpoint keeps, so that a resumed run keeps the same best model and patience."""
        return {"best": self.best, "best_step": self.best_step, "since_best": self.since_best,
                "weights": self.weights}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.best, self.best_step = state["best"], state["best_step"]
        self.since_best, self.weights = int(state["since_best"]), state["weights"]

    def summary(self) -> dict[str, float]:
        """What the run folder's summary says about the kept model."""
        if self.best_step is None:
            return {}
        return {"kept_step": self.best_step, f"val_{self.evaluation.measure}": self.best}
