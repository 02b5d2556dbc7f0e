#!/usr/bin/env bash
# Fetches the public official IOI task packages that `ioi-run fidelity` judges, into DEST:
#   DEST/ioi2022/   github.com/ioi-2022/tasks (TPS packages) with its `tps` submodule
#   DEST/ioi2024/   github.com/ioi-2024/tasks, every <task>-CMS archive unpacked as
#                   DEST/ioi2024/<day>/<task>/ (CMS exports with solutions/<category>/)
# Needs git, unzip, tar with xz, and network access to GitHub. Nothing is fetched by the tests:
# run this once, then `ioi-run fidelity DEST/ioi2022 DEST/ioi2024`.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DEST   (a folder outside the repository)" >&2
  exit 2
fi
dest=$1
mkdir -p "$dest"
cd "$dest"

# The submodule is declared with an ssh URL: anonymous https works for everyone.
https=(-c url."https://github.com/".insteadOf="git@github.com:")

if [[ ! -d ioi2022/.git ]]; then
  git "${https[@]}" clone --recursive https://github.com/ioi-2022/tasks ioi2022
else
  git -C ioi2022 "${https[@]}" submodule update --init
fi

if [[ ! -d ioi2024-repo/.git ]]; then
  git clone https://github.com/ioi-2024/tasks ioi2024-repo
fi
mkdir -p ioi2024
while IFS= read -r archive; do
  day=$(basename "$(dirname "$(dirname "$archive")")")
  mkdir -p "ioi2024/$day"
  case $archive in
    *.zip) unzip -q -o "$archive" -d "ioi2024/$day" ;;
    *.tar.xz) tar -xJf "$archive" -C "ioi2024/$day" ;;
  esac
done < <(find ioi2024-repo -name '*-CMS.zip' -o -name '*-CMS.tar.xz' | sort)

echo "fetched into $dest: ioi-run fidelity $dest/ioi2022 $dest/ioi2024"
