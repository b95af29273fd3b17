#!/usr/bin/env bash
# Screenshots of the built site (home page and one paper page) with headless Chromium.
# Needs a chromium/google-chrome binary on PATH (not installed by this project).
# Usage: docs/screenshot.sh [site-dir] [out-dir] [paper-slug]
set -euo pipefail
SITE=${1:-site}; OUT=${2:-docs-screenshots}; SLUG=${3:-effbench}
BROWSER=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$BROWSER" ]; then
  echo "no chromium found; build the site, then run:" >&2
  echo "  chromium --headless --disable-gpu --window-size=1400,900 --screenshot=home.png file://\$PWD/$SITE/index.html" >&2
  exit 1
fi
mkdir -p "$OUT"
"$BROWSER" --headless --disable-gpu --no-sandbox --window-size=1400,900 \
  --screenshot="$OUT/home.png" "file://$(realpath "$SITE")/index.html"
"$BROWSER" --headless --disable-gpu --no-sandbox --window-size=1400,900 \
  --screenshot="$OUT/$SLUG.png" "file://$(realpath "$SITE")/papers/$SLUG/index.html"
echo "wrote $OUT/home.png $OUT/$SLUG.png"
