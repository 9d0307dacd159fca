# Two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run demo test fuzz lint bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# the playground and the CLI need only the package; the tests, lint and bench add the dev extras
$(VENV)/.installed-run: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install -q -e '.[dev,dask]'
	touch $@ $(VENV)/.installed-run

## run: install, then start the Streamlit playground on http://localhost:$(PORT)
run: $(VENV)/.installed-run
	$(BIN)/streamlit run app.py --server.headless true --server.port $(PORT) \
		--browser.gatherUsageStats false

## demo: the CLI on the sample athletes, no browser
demo: $(VENV)/.installed-run
	$(BIN)/coachctx athletes
	$(BIN)/coachctx explain "Should I train through this pain?" --athlete maya

## test: lint, type-check and the whole suite (browser test included)
test: $(VENV)/.installed lint
	$(BIN)/python -m pytest

## fuzz: the property tests with fresh random examples (the suite's are fixed), ten rounds
fuzz: $(VENV)/.installed
	for i in 1 2 3 4 5 6 7 8 9 10; do \
		$(BIN)/python -m pytest -q -p no:cacheprovider --hypothesis-profile=explore \
			tests/engine/test_engine_properties.py tests/engine/test_engine_token_count.py \
			tests/robustness/test_robustness_question.py || exit 1; \
	done

lint: $(VENV)/.installed
	$(BIN)/ruff check coachctx tests app.py bench
	$(BIN)/mypy

## bench: write bench/REPORT.md and its plots
bench: $(VENV)/.installed
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
