"""One trainer for text policies (vision-language models that write their actions as text).

SFT, one-step GRPO and multi-turn GRPO live here once, each a module you can read top to bottom
(:mod:`.sft`, :mod:`.grpo`, :mod:`.multiturn`); a domain plugs in through a small task adapter
(:mod:`.adapter`: the codec, demonstrations, prompts and rewards, episodes, the held-out
evaluation). The GUI (``pixelrl.gui_agent.train_vlm``) and navigation
(``pixelrl.embodied.vlm_train``) recipes are adapters. Rows are typed (:mod:`.rows`); the policy
is loaded in one place (:mod:`.policy`); :mod:`.recipe` is ``pixelrl train``'s entry for them.
What every adapter needs is here once: env groups (:mod:`.env_group`), demonstrations recorded
and read back (:mod:`.demos`), held-out success (:mod:`.heldout`), replay of failed starts
(:mod:`.replay`).
"""
