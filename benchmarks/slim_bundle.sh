#!/usr/bin/env bash
# Shrinks a bundle made by ../shared/device/make-bundle.sh to fit a device call's 64 MiB beside the working tree:
# drops Ray's raylet and GCS server binaries (about 16 MB packed). `import ray` still works (CompileIQ needs it),
# but no Ray cluster can start, so the `ray` step of gpu_session.sh and the Ray GPU test need the full bundle.
# Usage (repository root): bash benchmarks/slim_bundle.sh [.devbundle]
set -euo pipefail
bundle="${1:-.devbundle}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
xz -dc "$bundle/site.tar.xz" | tar -C "$tmp" -xf -
rm -rf "$tmp/ray/core/src/ray/raylet" "$tmp/ray/core/src/ray/gcs"
tar -C "$tmp" -cf - . | xz -T0 -6 > "$bundle/site.tar.xz.new"
mv "$bundle/site.tar.xz.new" "$bundle/site.tar.xz"
du -sh "$bundle"
