#!/usr/bin/env bash
# Prepares a fresh Debian 12 (bookworm) machine for the test tiers. Idempotent: run it as often as you like.
#  - chromium (Debian's; the browser tier never downloads a browser)
#  - mesa-vulkan-drivers >= 25 from bookworm-backports (lavapipe: a software Vulkan driver with shader-f16;
#    Debian 12's own Mesa 22.3 gives Dawn no adapter)
# As root it installs; otherwise it prints the exact commands and exits 1.
set -euo pipefail

need_chromium=0
need_mesa=0
[ -x /usr/bin/chromium ] || need_chromium=1
mesa_version=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
case "$mesa_version" in
  2[5-9].*|[3-9][0-9].*) ;;
  *) need_mesa=1 ;;
esac
[ -f /usr/share/vulkan/icd.d/lvp_icd.json ] || need_mesa=1

if [ "$need_chromium" = 0 ] && [ "$need_mesa" = 0 ]; then
  echo "setup-machine: chromium and lavapipe (mesa $mesa_version) are present" >&2
  exit 0
fi

backports_line='deb http://deb.debian.org/debian bookworm-backports main'
commands=()
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
  commands+=("echo '$backports_line' > /etc/apt/sources.list.d/bookworm-backports.list")
fi
commands+=("apt-get update")
[ "$need_chromium" = 1 ] && commands+=("DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-liberation")
[ "$need_mesa" = 1 ] && commands+=("DEBIAN_FRONTEND=noninteractive apt-get install -y -t bookworm-backports mesa-vulkan-drivers libvulkan1")

if ! grep -qs 'bookworm' /etc/os-release; then
  echo "setup-machine: this script knows Debian 12 (bookworm). On other systems install Chromium with WebGPU and Mesa >= 25 lavapipe (or use a GPU driver), then set CHROMIUM_PATH and VK_ICD_FILENAMES." >&2
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  echo "setup-machine: missing system packages. Run as root:" >&2
  for c in "${commands[@]}"; do echo "  $c" >&2; done
  exit 1
fi

for c in "${commands[@]}"; do
  echo "+ $c" >&2
  bash -c "$c" >&2
done
echo "setup-machine: done (mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers))" >&2
