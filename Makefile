# Quick start: `make run` (the bot in your terminal) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/gpu-garden

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy calculator knowledge bot
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python bench/calculator_accuracy.py
	$(BIN)/python bench/vram_latency.py
	$(BIN)/python bench/detector_throughput.py
	$(BIN)/python bench/reply_latency.py
	$(BIN)/python bench/discord_latency.py
	$(BIN)/python bench/slack_latency.py
	$(BIN)/python bench/wild_accuracy.py
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/verify_fixes.py
	$(BIN)/python bench/prefix_recall.py
	$(BIN)/python bench/reply_review.py
	$(BIN)/python bench/detector_vs_grep.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache
