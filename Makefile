# Two entry points: `make demo` and `make test`. Both create (or reuse) the virtual
# environment in $(VENV) and install the project into it first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build that this project's machines install from disk; override for a CUDA build.
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= testbed,trl,verl,math,analyze,test
DEMO_OUT ?= runs/demo

.PHONY: demo clean-demo test test-e2e lint install dist check-wheel bench bench-trainer bench-peers bench-smoke gpu-check base sweep-quick results clean

$(VENV)/.installed-$(EXTRAS): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed-$(EXTRAS)

# FADE against grpo on the same seed, base policy and prompts: two of the paper preset's runs
# (countdown_multi, 200 steps, one core each, side by side), then one comparison figure,
# $(DEMO_OUT)/compare.png, and a table. A rerun skips what finished; `make clean-demo` removes it.
# The demo needs the testbed only: the engines' extras (verl pulls Ray) are for `make test`.
demo:
	$(MAKE) install EXTRAS=testbed
	$(VENV)/bin/fade demo --out $(DEMO_OUT)

clean-demo:
	rm -rf $(DEMO_OUT)

test: install
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m pytest -q -n 2

# The sdist and the wheel (built from the sdist) into dist/: `pip install 'dist/fade_rl-VERSION-py3-none-any.whl[testbed]'`
# installs fade on a machine without this checkout.
dist: install
	rm -rf dist
	$(PY) -m build --outdir dist .

# What CI checks after the suite: the wheel installs into an empty environment outside the checkout
# and runs `fade --version` and a one-step `fade train` from there; then, with the math extra and
# ANTLR 4.13.2 added (the suite's environment has verl's 4.9.3), the math conformance set gets the
# same verdicts as in the suite.
check-wheel: install
	PYTHON=$(PY) TORCH_SPEC="$(TORCH_SPEC)" .ci/check-wheel

# verl's own main_ppo on CPU, end to end (tests/test_verl_cpu_e2e.py, about 5 minutes on 2 cores).
test-e2e: install
	$(PY) -m pytest -q -n 0 -m e2e tests/test_verl_cpu_e2e.py

lint: install
	$(PY) -m ruff check src tests benchmarks examples

bench: install
	$(PY) benchmarks/advantages.py

bench-trainer: install
	$(PY) benchmarks/trainer.py

bench-peers: install
	$(PY) benchmarks/peers.py

# Every benchmark script with a tiny setting that measures nothing (tests/test_benchmarks.py runs
# the same in the suite): a script that no longer runs fails here, not in front of a user.
bench-smoke: install
	for script in benchmarks/*.py; do $(PY) $$script --smoke || exit 1; done

# fade's CUDA paths and the testbed's speed at 1M/20M/50M parameters on one GPU, in under 8 minutes
# (docs/gpu/README.md): writes docs/gpu/gpu_check.json and gpu_check.md. It needs a CUDA build of
# torch with the testbed and trl extras: this project's .venv after `make install TORCH_SPEC=...`
# (the default), or any such python (GPU_PYTHON=python3), which reads fade from src/.
GPU_PYTHON ?= $(PY)
gpu-check:
	PYTHONPATH=src $(GPU_PYTHON) benchmarks/gpu_check.py --device cuda --out docs/gpu

# The paper's claims on the testbed (docs/results/README.md): quick is about 10 minutes on
# 2 cores, the full sweep about 3 hours; both resume where they stopped.
sweep-quick: install
	$(VENV)/bin/fade sweep --preset quick --out docs/results/quick

results: install
	$(VENV)/bin/fade sweep --preset full --out docs/results

# Regenerate the shipped base policies from their seeds (a few minutes each).
base: install
	$(VENV)/bin/fade pretrain --task arithmetic --seed 0 --out src/fade/testbed/base/arithmetic
	$(VENV)/bin/fade pretrain --task countdown --seed 0 --out src/fade/testbed/base/countdown

clean:
	rm -rf $(VENV) runs dist build .pytest_cache .hypothesis
