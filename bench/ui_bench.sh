#!/usr/bin/env bash
# `make bench` part f (bench/run.sh runs it): the streaming rows of
# bench/nvim_bench.lua again with a REAL UI attached — the same nvim binary
# with its TUI inside tmux (200x50, a private server on a socket in the
# scratch dir), a file open and the
# chat split next to it as `:Lathe` opens it — so every frame's screen
# redraw counts in the 1 ms timer's lateness, which the headless rows never
# see. Against its own mock-llm serving the same script plus a paced answer
# (100 KB in 100-character deltas every 10 ms, as a model streams). The Lua way's
# buffer shows in the chat's window. Prints the rows nvim_bench.lua wrote
# to a file (the terminal is tmux's). Ends by itself: nvim quits, the tmux
# server is killed; fails (exit 1, the screen and what was written shown)
# when nvim errs or does not end within LATHE_BENCH_UI_TIMEOUT s (300).
#
# Needs: LATHE_BENCH_NVIM (the wheel's real nvim), LATHE_LIB, LATHE_BENCH_MOCK,
# LATHE_BENCH_WORK (run.sh's scratch dir: script.json, read1.txt, the
# answers), LATHE_BENCH_TREE, LATHE_BENCH_RG; tmux.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/start_mock.sh
. "$root/bench/start_mock.sh"
: "${LATHE_BENCH_NVIM:?}" "${LATHE_LIB:?}" "${LATHE_BENCH_MOCK:?}" "${LATHE_BENCH_WORK:?}"
: "${LATHE_BENCH_TREE:?}" "${LATHE_BENCH_RG:?}"
work=$LATHE_BENCH_WORK
timeout=${LATHE_BENCH_UI_TIMEOUT:-300}
command -v tmux >/dev/null || { echo "ui bench: tmux is not installed"; exit 1; }

ui=$work/ui
rm -rf "$ui"
mkdir -p "$ui"
sock=$ui/tmux.sock
mock_pid=""
cleanup() {
  # The pane's shell leads its process group (tmux starts it with setsid),
  # the TUI is in it; the Neovim it runs (--embed) is detached, so
  # nvim_bench.lua wrote its pid. Both go, even when they ignore the hangup
  # that ending tmux sends.
  if [ -s "$ui/pid" ]; then
    kill -TERM -- "-$(cat "$ui/pid")" 2>/dev/null || true
  fi
  if [ -s "$ui/nvim.pid" ]; then
    kill -TERM "$(cat "$ui/nvim.pid")" 2>/dev/null || true
  fi
  tmux -S "$sock" kill-server 2>/dev/null || true
  if [ -n "$mock_pid" ]; then
    kill "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# run.sh's script and one more answer, paced as a model streams: the first
# 100 KB of the one-line answer in 100-character deltas every 10 ms.
python3 - "$work" "$ui" <<'PY'
import json, sys
work, ui = sys.argv[1], sys.argv[2]
script = json.load(open(f"{work}/script.json"))
text = open(f"{work}/answer.txt").read()[:100_000]
open(f"{ui}/answer_paced.txt", "w").write(text)
script["responses"].append({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                            "text_chunk_chars": 100, "event_delay_ms": 10})
json.dump(script, open(f"{ui}/script.json", "w"))
PY
start_mock "$LATHE_BENCH_MOCK" "$ui/script.json" "$ui" || exit 1

# The command tmux runs: nvim with its TUI, read1.txt open, nvim_bench.lua
# started as in run.sh's headless row but writing to ui/out.
q() { printf "'%s'" "$(printf %s "$1" | sed "s/'/'\\\\''/g")"; }
lua_start="lua vim.schedule(function() local ok, err = coroutine.resume(coroutine.create(assert(loadfile('$root/bench/nvim_bench.lua')))) if not ok then local f = io.open(os.getenv('LATHE_BENCH_OUT'), 'a') f:write('nvim_bench.lua: ' .. tostring(err) .. '\\n') f:close() vim.cmd('cquit 1') end end)"
cat >"$ui/run-nvim.sh" <<EOF
echo \$\$ >$(q "$ui/pid")
export XDG_STATE_HOME=$(q "$ui/state") ANTHROPIC_API_KEY=bench LATHE_LIB=$(q "$LATHE_LIB")
export LATHE_BENCH_TREE=$(q "$LATHE_BENCH_TREE") LATHE_BENCH_RG=$(q "$LATHE_BENCH_RG")
export LATHE_BENCH_WORK=$(q "$work") LATHE_BENCH_BASE_URL=$(q "$base_url")
export LATHE_BENCH_UI=1 LATHE_BENCH_OUT=$(q "$ui/out") LATHE_BENCH_PID=$(q "$ui/nvim.pid")
cd $(q "$work")
$(q "$LATHE_BENCH_NVIM") -u NONE -i NONE -n --cmd $(q "set rtp^=$root") -c $(q "$lua_start") read1.txt
echo \$? >$(q "$ui/rc")
EOF
tmux -S "$sock" -f /dev/null new-session -d -x 200 -y 50 "sh $(q "$ui/run-nvim.sh")"

fail() {
  echo "ui bench: $1"
  echo "-- what nvim_bench.lua wrote:"
  cat "$ui/out" 2>/dev/null || true
  echo "-- the screen:"
  tmux -S "$sock" capture-pane -p 2>/dev/null | sed '/^$/d' | tail -n 20 || true
  exit 1
}
deadline=$((SECONDS + timeout))
while [ ! -s "$ui/rc" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "nvim did not end within $timeout s"
  sleep 0.2
done
[ "$(cat "$ui/rc")" = 0 ] || fail "nvim exited with $(cat "$ui/rc")"
grep -q "^ui bench done$" "$ui/out" || fail "nvim quit before the rows were written"
grep -v "^ui bench done$" "$ui/out"
