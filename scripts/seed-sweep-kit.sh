#!/usr/bin/env bash
# Builds .sweep-kit/: the tool-choice task's stability bench (bench/tool-task-stability.ts, float64 CPU backend,
# no GPU needed) bundled into one ESM file with this machine's node binary, so the `device` tool's machine — no
# Node.js, but 16 CPU cores — runs a list of seeds and settings side by side, one process a core.
#
#   bash scripts/seed-sweep-kit.sh          # build .sweep-kit/ (git-ignored)
#   device run, carry [".sweep-kit"], command:
#     bash .sweep-kit/run.sh JOBS OUTDIR CAP_SECONDS
#   JOBS: a file, one job a line, "name<TAB>bench arguments" (e.g. "s101	--seeds 101 --steps 120 --eval-every 10");
#   each job writes its own log as it runs (one line per evaluation), so a job cut off at CAP_SECONDS still
#   reports every evaluation it reached; at the end every log is gathered, each under a "=== name" line, into
#   OUTDIR/results.txt beside OUTDIR/machine.txt. One file, because a device call brings back at most 8 files
#   of $OUT (2026-11-27: 16 job logs written there, 8 came back, the rest were gone with the machine).
#   Jobs beyond the core count wait for a free core. Keep CAP_SECONDS some 30 s under the call's timeout_s.
# Measured (2026-11-27, H200 machine's 16-core Xeon, 16 jobs at once): a 120-step run of the default shape takes
# about 5.6 s a step there (this 2-core machine: 3.3 s a step with two at once), the 64-wide model ~13 s.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=.sweep-kit
rm -rf "$KIT"
mkdir -p "$KIT"
npx --no-install esbuild bench/tool-task-stability.ts --bundle --platform=node --format=esm --target=node20 \
  --log-level=warning --outfile="$KIT/tool-task-stability.mjs"
xz -T0 -6 -c "$(command -v node)" > "$KIT/node.xz"
dirty=$(git status --porcelain | grep -q . && echo true || echo false)
printf '{"commit": "%s", "dirty": %s, "builtAt": "%s", "node": "%s"}\n' "$(git rev-parse HEAD)" "$dirty" "$(date -u +%FT%TZ)" "$(node -v)" > "$KIT/kit.json"
cat > "$KIT/run.sh" <<'RUN'
#!/usr/bin/env bash
set -euo pipefail
jobs_file=${1:?usage: run.sh JOBS OUTDIR CAP_SECONDS}
out=${2:?usage: run.sh JOBS OUTDIR CAP_SECONDS}
cap=${3:?usage: run.sh JOBS OUTDIR CAP_SECONDS}
kit=$(cd "$(dirname "$0")" && pwd)
work=${SWEEP_WORK:-/tmp/sweep-kit}
mkdir -p "$work" "$out"
[ -x "$work/node" ] || { xz -dc "$kit/node.xz" > "$work/node"; chmod +x "$work/node"; }
cp "$kit/tool-task-stability.mjs" "$kit/kit.json" "$work/"
cores=$(nproc)
{ echo "cores $cores"; lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|Thread' || true; cat "$kit/kit.json"; } > "$out/machine.txt"
logs=$work/logs
rm -rf "$logs"
mkdir -p "$logs"
names=()
t0=$(date +%s)
while IFS=$'\t' read -r name args; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue ;; esac
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do sleep 1; done
  left=$(( cap - ($(date +%s) - t0) ))
  [ "$left" -le 5 ] && { echo "$name: not started (cap reached)" >> "$out/machine.txt"; continue; }
  # shellcheck disable=SC2086
  ( timeout "$left" "$work/node" "$work/tool-task-stability.mjs" $args < /dev/null > "$logs/$name.log" 2>&1; echo "rc $? $(( $(date +%s) - t0 )) s" >> "$logs/$name.log" ) &
  names+=("$name")
done < "$jobs_file"
wait
for n in "${names[@]}"; do echo "=== $n"; cat "$logs/$n.log"; done > "$out/results.txt"
echo "done $(( $(date +%s) - t0 )) s" >> "$out/machine.txt"
RUN
chmod +x "$KIT/run.sh"
du -sh "$KIT" >&2
