# Sourced by the test and bench scripts: selects the Vulkan driver Dawn uses in Node.
# On a machine with a GPU driver (NVIDIA's ICD present) the real GPU is used; otherwise lavapipe.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  if ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json >/dev/null 2>&1; then
    :
  elif [ -f /usr/share/vulkan/icd.d/lvp_icd.json ]; then
    export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.json
  fi
fi
export CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
