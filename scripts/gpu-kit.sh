#!/usr/bin/env bash
# Builds .gpu-kit/: what the GPU machine of the `device` tool needs to run the planner benchmarks on its GPU.
# That machine has NVIDIA's driver but no Node.js, no Vulkan loader and no network, and each call carries at
# most 64 MiB, so the kit holds: this machine's node binary (xz), the benchmarks and the CLI bundled into
# single ESM files, the `webgpu` package (Dawn) for linux-x64 only, and Debian's amd64 Vulkan loader and
# libglvnd (.deb).
#
# It also holds bench/peft_step.py (the PyTorch + PEFT baseline; the GPU machine has python3 and torch) and
# kit.json (the commit it was built from).
#
#   bash scripts/gpu-kit.sh                 # build .gpu-kit/ (git-ignored)
#   device run, carry [".gpu-kit"], command (everything issue 17 measures, one call, about 540 s at most):
#     bash .gpu-kit/run.sh all $OUT
#   $OUT then holds one <part>.json and <part>.log per part and summary.json (each part's status, exit code,
#   limit and seconds, and the headline figures for the README's table); bench/gpu-all-plan.ts lists the parts, their order and time caps, bench/gpu-all.ts the
#   environment that changes them (GPU_KIT_BANDWIDTH=GB/s, default 3350 for an H100 SXM; GPU_KIT_CAPS;
#   GPU_KIT_BUDGET). `run.sh all $OUT bench-1.5b-q4 peft-1.5b` runs only the parts named. Single runs:
#     bash .gpu-kit/run.sh bench --models qwen2.5-0.5b,qwen2.5-0.5b-q4 --bandwidth 3350 > $OUT/bench.json
#     bash .gpu-kit/run.sh q4 > $OUT/q4.json
#     bash .gpu-kit/run.sh adapter > $OUT/adapter.json
#     bash .gpu-kit/run.sh sgm-probe > $OUT/sgm-probe.json   # subgroup matrices: configs, error, TFLOP/s
#
# Locally, `bash .gpu-kit/run.sh ...` from a copy of the kit alone (no node_modules) checks that it is
# self-contained; it then runs on whatever Vulkan driver VK_ICD_FILENAMES names (lavapipe here). There,
#   GPU_KIT_SMOKE=1 GPU_KIT_FIXTURES=../shared/fixtures bash /tmp/kit/run.sh all /tmp/out
# runs every part on the fixtures with a few tokens (a few minutes on lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=.gpu-kit
rm -rf "$KIT"
mkdir -p "$KIT/node_modules/webgpu/dist" "$KIT/gl"

echo "gpu-kit: bundling the benchmarks and the CLI" >&2
# `webgpu` stays external: it is a native addon, loaded at run time from the kit's node_modules.
bundle() { npx --no-install esbuild "$1" --bundle --platform=node --format=esm --target=node20 \
  --external:webgpu --log-level=warning --outfile="$KIT/$2"; }
bundle bench/run.ts bench.mjs
bundle bench/q4.ts q4.mjs
bundle bench/decode-profile.ts profile.mjs
bundle bench/train-profile.ts train-profile.mjs
bundle bench/prefill-profile.ts prefill-profile.mjs
bundle src/cli/main.ts cli.mjs
bundle bench/adapter-info.ts adapter.mjs
bundle bench/gpu-all.ts all.mjs
bundle bench/constrained.ts constrained.mjs
bundle bench/subgroup-matrix-probe.ts sgm-probe.mjs
bundle bench/f16-agreement.ts f16-check.mjs
cp bench/peft_step.py "$KIT/"
dirty=$(git status --porcelain | grep -q . && echo true || echo false)
printf '{"commit": "%s", "dirty": %s, "builtAt": "%s", "node": "%s"}\n' "$(git rev-parse HEAD)" "$dirty" "$(date -u +%FT%TZ)" "$(node -v)" > "$KIT/kit.json"

echo "gpu-kit: copying the webgpu package (linux-x64)" >&2
cp node_modules/webgpu/package.json node_modules/webgpu/index.js "$KIT/node_modules/webgpu/"
cp -r node_modules/webgpu/dist/linux-x64 "$KIT/node_modules/webgpu/dist/"
xz -T0 -6 "$KIT/node_modules/webgpu/dist/linux-x64/dawn.node"

echo "gpu-kit: compressing $(command -v node) ($(node -v))" >&2
xz -T0 -6 -c "$(command -v node)" > "$KIT/node.xz"

echo "gpu-kit: downloading Debian's amd64 Vulkan loader" >&2
lists=$(mktemp -d)
mkdir -p "$lists/partial"
apt_opts=(-o APT::Sandbox::User=root -o APT::Architecture=amd64 -o APT::Architectures=amd64 -o "Dir::State::Lists=$lists")
apt-get "${apt_opts[@]}" -qq update
# NVIDIA's Vulkan driver lives in libGLX_nvidia.so.0, which needs libglvnd's dispatch libraries too.
(cd "$KIT/gl" && apt-get "${apt_opts[@]}" -qq download libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2)
rm -rf "$lists"

cat > "$KIT/run.sh" <<'EOF'
#!/usr/bin/env bash
# bash .gpu-kit/run.sh all OUTDIR [part ...] | bench|q4|profile|train-profile|prefill-profile|constrained|adapter|sgm-probe|f16-check|cli [args...]: unpacks node
# and Dawn once, finds a Vulkan driver, runs (`all`: every part of bench/gpu-all-plan.ts into OUTDIR).
set -euo pipefail
# `all` counts its time budget from here: unpacking takes part of the call too.
export GPU_KIT_T0=${GPU_KIT_T0:-$(date +%s.%N)}
kit=$(cd "$(dirname "$0")" && pwd)
work=${GPU_KIT_WORK:-/tmp/gpu-kit}
mkdir -p "$work"
[ -x "$work/node" ] || { xz -dc "$kit/node.xz" > "$work/node"; chmod +x "$work/node"; }
# The kit may be read-only (carried files): run from a writable copy with Dawn unpacked.
cp "$kit"/*.mjs "$kit"/*.py "$kit"/kit.json "$work/"
if [ ! -f "$work/node_modules/webgpu/dist/linux-x64/dawn.node" ]; then
  cp -r "$kit/node_modules" "$work/"
  xz -d "$work/node_modules/webgpu/dist/linux-x64/dawn.node.xz"
fi
if ! ldconfig -p | grep -q 'libvulkan.so.1' || ! ldconfig -p | grep -q 'libGLdispatch.so.0'; then
  for f in "$kit"/gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ] && [ -f "$nv" ]; then export VK_DRIVER_FILES=$nv; fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
what=${1:?usage: run.sh all OUTDIR [part ...] | bench|q4|profile|train-profile|prefill-profile|constrained|adapter|sgm-probe|f16-check|cli [args...]}
shift
case "$what" in
  all) exec "$work/node" "$work/all.mjs" "$@" ;;
  adapter) exec "$work/node" "$work/adapter.mjs" "$@" ;;
  bench) exec "$work/node" "$work/bench.mjs" "$@" ;;
  q4) exec "$work/node" "$work/q4.mjs" "$@" ;;
  profile) exec "$work/node" "$work/profile.mjs" "$@" ;;
  train-profile) exec "$work/node" "$work/train-profile.mjs" "$@" ;;
  prefill-profile) exec "$work/node" "$work/prefill-profile.mjs" "$@" ;;
  constrained) exec "$work/node" "$work/constrained.mjs" "$@" ;;
  sgm-probe) exec "$work/node" "$work/sgm-probe.mjs" "$@" ;;
  f16-check) exec "$work/node" "$work/f16-check.mjs" "$@" ;;
  cli) exec "$work/node" "$work/cli.mjs" "$@" ;;
  *) echo "run.sh: unknown command '$what' (all, adapter, bench, q4, profile, train-profile, prefill-profile, constrained, sgm-probe, f16-check, cli)" >&2; exit 2 ;;
esac
EOF
chmod +x "$KIT/run.sh"
du -sh "$KIT" >&2
