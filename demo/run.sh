#!/usr/bin/env bash
# `make demo`: lathe fixes a real bug in a copy of demo/project, inside
# headless Neovim, through the real permission float (answered `y` by the
# demo itself). Against the bundled scripted model (tests/mock-llm) by
# default; against the real Anthropic API when ANTHROPIC_API_KEY is set.
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

if [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  base_url=""
  prompt=${PROMPT:-"python3 test_greeting.py fails. Find the bug and fix it."}
  echo "== model: the real Anthropic API"
else
  "$root/target/release/mock-llm" --script "$root/demo/script.json" --port 0 \
    --log "$tmp/requests.jsonl" >"$tmp/mock.out" 2>"$tmp/mock.err" &
  mock_pid=$!
  for _ in $(seq 1 100); do
    grep -q "^listening on " "$tmp/mock.out" 2>/dev/null && break
    sleep 0.05
  done
  base_url=$(sed -n 's/^listening on //p' "$tmp/mock.out" | head -n 1)
  [ -n "$base_url" ] || { echo "mock-llm did not start:"; cat "$tmp/mock.err"; exit 1; }
  prompt=${PROMPT:-"fix the typo in the greeting"}
  echo "== model: scripted (mock-llm at $base_url; set ANTHROPIC_API_KEY for the real API)"
fi

echo "== :Lathe $prompt"
LATHE_DEMO_CWD=$work LATHE_DEMO_BASE_URL=$base_url LATHE_DEMO_PROMPT=$prompt \
  "$nvim" --headless -u NONE -i NONE -n --cmd "set rtp^=$root" -c "luafile $root/demo/demo.lua"

echo "== git diff"
git -C "$work" --no-pager diff --color=never
echo "== after: python3 test_greeting.py"
(cd "$work" && python3 test_greeting.py)
