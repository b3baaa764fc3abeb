"""fade inside existing RL engines: TRL's GRPOTrainer (:mod:`fade.integrations.trl`) and verl's
advantage registry and PPO trainer (:mod:`fade.integrations.verl`).

Each submodule imports its engine and needs the matching extra (``fade-rl[trl]``,
``fade-rl[verl]``); this package itself imports nothing heavy, and the core never imports it.
"""
