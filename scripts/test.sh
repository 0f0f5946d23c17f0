#!/usr/bin/env bash
# The one test command (npm test): system packages, a fresh build, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --tests
npm run build
npm run typecheck
npm run lint
npx vitest run "$@"
