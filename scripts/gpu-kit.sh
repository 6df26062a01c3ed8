#!/usr/bin/env bash
# Builds .gpu-kit/: what the GPU machine of the `device` tool needs to run the planner benchmarks on its GPU.
# That machine has NVIDIA's driver but no Node.js, no Vulkan loader and no network, and each call carries at
# most 64 MiB, so the kit holds: this machine's node binary (xz), the benchmarks and the CLI bundled into
# single ESM files, the `webgpu` package (Dawn) for linux-x64 only, and Debian's amd64 Vulkan loader and
# libglvnd (.deb).
#
#   bash scripts/gpu-kit.sh                 # build .gpu-kit/ (git-ignored)
#   device run, carry [".gpu-kit"], command:
#     bash .gpu-kit/run.sh bench --models qwen2.5-0.5b,qwen2.5-0.5b-q4 --bandwidth 3350 > $OUT/bench.json
#     bash .gpu-kit/run.sh bench --models qwen2.5-0.5b,qwen2.5-0.5b-q4 --parts e2e > $OUT/e2e.json
#     bash .gpu-kit/run.sh q4 > $OUT/q4.json
#
# Locally, `bash .gpu-kit/run.sh bench ...` from a copy of the kit alone (no node_modules) checks that it is
# self-contained; it then runs on whatever Vulkan driver VK_ICD_FILENAMES names (lavapipe here).
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
bundle src/cli/main.ts cli.mjs

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
# bash .gpu-kit/run.sh bench|q4|profile|train-profile|cli [args...]: unpacks node and Dawn once, finds a Vulkan driver, runs.
set -euo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
work=${GPU_KIT_WORK:-/tmp/gpu-kit}
mkdir -p "$work"
[ -x "$work/node" ] || { xz -dc "$kit/node.xz" > "$work/node"; chmod +x "$work/node"; }
# The kit may be read-only (carried files): run from a writable copy with Dawn unpacked.
cp "$kit"/*.mjs "$work/"
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
what=${1:?usage: run.sh bench|q4|profile|train-profile|cli [args...]}
shift
case "$what" in
  bench) exec "$work/node" "$work/bench.mjs" "$@" ;;
  q4) exec "$work/node" "$work/q4.mjs" "$@" ;;
  profile) exec "$work/node" "$work/profile.mjs" "$@" ;;
  train-profile) exec "$work/node" "$work/train-profile.mjs" "$@" ;;
  cli) exec "$work/node" "$work/cli.mjs" "$@" ;;
  *) echo "run.sh: unknown command '$what' (bench, q4, profile, train-profile, cli)" >&2; exit 2 ;;
esac
EOF
chmod +x "$KIT/run.sh"
du -sh "$KIT" >&2
