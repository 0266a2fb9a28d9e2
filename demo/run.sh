#!/usr/bin/env bash
# `make demo`: lathe fixes a real bug in a copy of demo/project, inside
# headless Neovim, through the real permission float (answered `y` by the
# demo itself). Against the bundled scripted model (tests/mock-llm) by
# default; against the real API when its key is set.
#
# demo/script.json checks results with tool_result_contains only, so it
# plays on both of mock-llm's endpoints (chat completions has no is_error).
#
# PROVIDER=anthropic (default): the Messages API; the real one when
#   ANTHROPIC_API_KEY is set.
# PROVIDER=openai: OpenAI-compatible chat completions; the real one at
#   $OPENAI_BASE_URL (default api.openai.com) with MODEL (default gpt-4.1)
#   when OPENAI_API_KEY is set.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
nvim=${NVIM:-$root/.venv/bin/nvim}
tmp=$(mktemp -d)
work=$tmp/project
mock_pid=""
cleanup() {
  [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$work"
cp -R "$root/demo/project/." "$work/"
git -C "$work" init -q
git -C "$work" add -A
git -C "$work" -c user.email=demo@lathe.invalid -c user.name=demo commit -qm "before lathe"

echo "== project: $work"
echo "== before: python3 test_greeting.py"
(cd "$work" && python3 test_greeting.py) 2>&1 | tail -n 1 || true

provider=${PROVIDER:-anthropic}
case "$provider" in
  anthropic) key_env=ANTHROPIC_API_KEY; model=${MODEL:-} ;;
  openai) key_env=OPENAI_API_KEY; model=${MODEL:-gpt-4.1} ;;
  *) echo "PROVIDER must be anthropic or openai, got $provider"; exit 2 ;;
esac

if [ -n "${!key_env:-}" ]; then
  base_url=""
  prompt=${PROMPT:-"python3 test_greeting.py fails. Find the bug and fix it."}
  echo "== model: the real $provider API (\$$key_env is set)"
else
  "${CARGO_TARGET_DIR:-$root/target}/release/mock-llm" --script "$root/demo/script.json" --port 0 \
    --log "$tmp/requests.jsonl" >"$tmp/mock.out" 2>"$tmp/mock.err" &
  mock_pid=$!
  for _ in $(seq 1 100); do
    grep -q "^listening on " "$tmp/mock.out" 2>/dev/null && break
    sleep 0.05
  done
  base_url=$(sed -n 's/^listening on //p' "$tmp/mock.out" | head -n 1)
  [ -n "$base_url" ] || { echo "mock-llm did not start:"; cat "$tmp/mock.err"; exit 1; }
  # An OpenAI-compatible base URL carries its version path.
  [ "$provider" = openai ] && base_url="$base_url/v1" && model=${MODEL:-mock-model}
  prompt=${PROMPT:-"fix the typo in the greeting"}
  echo "== model: scripted, $provider API (mock-llm at $base_url; set \$$key_env for the real API)"
fi

echo "== :Lathe $prompt"
LATHE_DEMO_CWD=$work LATHE_DEMO_BASE_URL=$base_url LATHE_DEMO_PROMPT=$prompt \
  LATHE_DEMO_PROVIDER=$provider LATHE_DEMO_MODEL=$model XDG_STATE_HOME=$tmp/state \
  "$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$root" -c "luafile $root/demo/demo.lua"

echo "== git diff"
git -C "$work" --no-pager diff --color=never
echo "== after: python3 test_greeting.py"
(cd "$work" && python3 test_greeting.py)
