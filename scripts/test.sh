#!/usr/bin/env bash
# npm test: type-check, then the four Vitest projects (unit, gpu on Dawn, browser in Chromium, e2e),
# then one closing line "N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-machine.sh
[ -d node_modules/vitest ] || npm ci
# shellcheck source=scripts/test-env.sh
source scripts/test-env.sh
if [ ! -d ../shared/fixtures ]; then
  echo "npm test: ../shared/fixtures is missing; clone the project with shared/ beside it." >&2
  exit 1
fi

echo "== typecheck" >&2
npx tsc --noEmit -p tsconfig.json

report=$(mktemp -t vitest-XXXXXX.json)
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const skipped = (r.numPendingTests || 0) + (r.numTodoTests || 0);
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  if (r.numTotalTests === 0) { console.error("no tests ran"); process.exit(1); }
' "$report" || status=1
rm -f "$report"
exit $status
