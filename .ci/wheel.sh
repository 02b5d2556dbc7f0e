#!/usr/bin/env bash
# CI: build the `pip install ioi-run` wheel for glibc 2.28 and newer (manylinux_2_28: RHEL 8 and
# its rebuilds, Ubuntu 20.04, Debian 10), install it into a fresh virtualenv and run the binary
# from there: `ioi-run --version`, `ioi-run doctor` and a judge of a fixture.
#
# maturin links with zig (`--zig`, the `ziglang` package from PyPI), which links against the
# glibc 2.28 symbol set whatever the build host's glibc; the script fails when the wheel's tag
# or the binary's highest `GLIBC_` symbol version says otherwise.
#
# The wheel is built with the `dev` profile by default: a release build of the whole workspace
# takes too long on a 2-core CI machine. For a wheel to publish:
#   IOI_RUN_WHEEL_PROFILE=release .ci/wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${IOI_RUN_WHEEL_PROFILE:-dev}"
glibc=2.28
work="$(mktemp -d "${TMPDIR:-/tmp}/ioi-run-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/build-env"
# The zig releases maturin's `--zig` is known to drive (CI installs 0.13).
"$work/build-env/bin/pip" install --quiet "maturin>=1.5,<2" "ziglang>=0.11,<0.14"
start=$SECONDS
# maturin finds the zig of the `ziglang` package through the build environment's python.
PATH="$work/build-env/bin:$PATH" maturin build --profile "$profile" \
  --zig --target x86_64-unknown-linux-gnu --compatibility "manylinux_${glibc/./_}" \
  --out "$work/wheels"
echo "wheel build: $((SECONDS - start)) s"

wheel=("$work"/wheels/ioi_run-*.whl)
name="$(basename "${wheel[0]}")"
echo "wheel: $name ($(du -h "${wheel[0]}" | cut -f1), profile $profile)"
case "$name" in
  *-manylinux_2_28_x86_64*.whl) ;;
  *) echo "the wheel is not tagged manylinux_2_28_x86_64: $name" >&2; exit 1 ;;
esac

# The binary's highest required glibc symbol version, read from the wheel itself.
python3 -m zipfile -e "${wheel[0]}" "$work/unpacked"
binary=("$work"/unpacked/ioi_run-*.data/scripts/ioi-run)
needed="$(objdump -T "${binary[0]}" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)"
echo "highest GLIBC symbol version the binary needs: $needed"
if [ "$(printf '%s\n%s\n' "$needed" "$glibc" | sort -V | tail -n1)" != "$glibc" ]; then
  echo "the binary needs GLIBC_$needed, above the wheel's $glibc:" >&2
  objdump -T "${binary[0]}" | grep "GLIBC_$needed" >&2
  exit 1
fi

python3 -m venv "$work/user-env"
"$work/user-env/bin/pip" install --quiet "${wheel[0]}"
# The venv's bin/ must provide the binary: call it through PATH as a user would.
export PATH="$work/user-env/bin:$PATH"
command -v ioi-run | grep -q "^$work/user-env/bin/ioi-run$"
ioi-run --version
ioi-run doctor
# A judge of a fixture whose every subtask is accepted, with a cache of its own.
IOI_RUN_CACHE="$work/cache" ioi-run judge --json tests/problems/sumpairs \
  tests/problems/sumpairs/solutions/ac.cpp >"$work/verdict.json"
python3 - "$work/verdict.json" <<'EOF'
import json, sys
verdict = json.load(open(sys.argv[1]))
statuses = {s["subtask"]: s["status"] for s in verdict["subtasks"]}
if statuses != {"00-samples": "AC", "01-small": "AC", "02-large": "AC"}:
    sys.exit(f"the wheel's judge of sumpairs/ac.cpp: {statuses}")
print(f"judge of sumpairs/ac.cpp: {statuses}")
EOF
echo "wheel OK"
