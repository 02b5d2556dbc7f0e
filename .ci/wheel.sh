#!/usr/bin/env bash
# CI: build the `pip install ioi-run` wheel with maturin, install it into a fresh virtualenv and
# run the binary from there (`ioi-run --version`, `ioi-run doctor`).
#
# The wheel is built with the `dev` profile by default: it reuses the test build, and a release
# build of the whole workspace takes too long on a 2-core CI machine. For a wheel to publish:
#   IOI_RUN_WHEEL_PROFILE=release .ci/wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${IOI_RUN_WHEEL_PROFILE:-dev}"
work="$(mktemp -d "${TMPDIR:-/tmp}/ioi-run-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/build-env"
"$work/build-env/bin/pip" install --quiet "maturin>=1.5,<2"
"$work/build-env/bin/maturin" build --profile "$profile" --out "$work/wheels"

wheel=("$work"/wheels/ioi_run-*.whl)
echo "wheel: $(basename "${wheel[0]}") ($(du -h "${wheel[0]}" | cut -f1), profile $profile)"

python3 -m venv "$work/user-env"
"$work/user-env/bin/pip" install --quiet "${wheel[0]}"
# The venv's bin/ must provide the binary: call it through PATH as a user would.
PATH="$work/user-env/bin:$PATH" command -v ioi-run | grep -q "^$work/user-env/bin/ioi-run$"
PATH="$work/user-env/bin:$PATH" ioi-run --version
PATH="$work/user-env/bin:$PATH" ioi-run doctor
echo "wheel OK"
