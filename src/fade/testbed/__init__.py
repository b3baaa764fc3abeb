"""The small-scale RLVR testbed: tasks with verifiers, a tiny base policy, a trainer and evaluation.

It sits above the core (`fade`'s estimators and diagnostics) and imports it, never the reverse.
It needs the `testbed` extra (transformers, tokenizers, tensorboard).
"""
