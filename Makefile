# Two entry points: `make demo` and `make test`. Both create (or reuse) the virtual
# environment in $(VENV) and install the project into it first.
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build that this project's machines install from disk; override for a CUDA build.
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= test
DEMO_OUT ?= runs/demo

.PHONY: demo test install bench clean

$(VENV)/.installed-$(EXTRAS): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed-$(EXTRAS)

demo: install
	$(VENV)/bin/fade atlas --group-size 16 --out $(DEMO_OUT)/atlas.png

test: install
	$(PY) -m pytest -q -n 2

bench: install
	$(PY) benchmarks/advantages.py

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
