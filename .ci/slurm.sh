#!/usr/bin/env bash
# Sourced by .ci/run: a single-node Slurm cluster for tests/it/slurm.rs, stopped when CI exits.
slurm_cluster="$(dirname "${BASH_SOURCE[0]}")/slurm-cluster.sh"
"$slurm_cluster" start
trap '"$slurm_cluster" stop' EXIT
