# Sourced by bench/run.sh and bench/ui_bench.sh.
#
# start_mock MOCK SCRIPT DIR: starts the scripted model (target/release/
# mock-llm) on a free port with SCRIPT, its output in DIR/mock.out and
# DIR/mock.err, and waits (at most 5 s) for its "listening on URL" line.
# Sets mock_pid (the caller's cleanup kills it) and base_url; returns 1
# with the server's stderr printed when it did not start.
start_mock() {
  "$1" --script "$2" --port 0 >"$3/mock.out" 2>"$3/mock.err" &
  mock_pid=$!
  for _ in $(seq 1 100); do
    grep -q "^listening on " "$3/mock.out" 2>/dev/null && break
    sleep 0.05
  done
  base_url=$(sed -n 's/^listening on //p' "$3/mock.out" | head -n 1)
  [ -n "$base_url" ] || { echo "mock-llm did not start:"; cat "$3/mock.err"; return 1; }
}
