#!/usr/bin/env bash
# The peers sysdelta's benchmarks (benches/) and reference checks measure
# it against: hyperfine (command timing), GNU time (maxrss), perf (the
# monitors' cost) from Debian, and benchstat (Go benchmark statistics)
# from the Go module proxy when Go is installed. Idempotent: installs only
# what is missing. apt-get needs root; benchstat goes to ~/go/bin.
set -euo pipefail
need=()
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
[ -x /usr/bin/time ] || need+=(time)
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
        echo "install-bench-peers: as root, apt-get install ${need[*]}" >&2
    fi
fi
if ! command -v benchstat >/dev/null 2>&1 && [ ! -x "$HOME/go/bin/benchstat" ]; then
    if command -v go >/dev/null 2>&1; then
        go install golang.org/x/perf/cmd/benchstat@latest
    else
        echo "install-bench-peers: no Go; benches/import_report.rs will time sysdelta alone" >&2
    fi
fi
