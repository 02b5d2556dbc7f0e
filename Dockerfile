# ioi-run in a container: `docker build -t ioi-run .` (or `podman build`).
# docs/container.md gives the `docker run` lines and the privileges they need.
#
# Two stages: `build` compiles the binary with the Rust toolchain; `runtime` holds what judging
# needs and no Rust. The runtime's base is a build argument: `--build-arg BASE=IMAGE` builds on a
# local Debian root that already has the packages below (nothing is then downloaded), and
# `--target runtime` stops before the binary, for a binary built elsewhere to be copied in
# (tests/it/container.rs does both).
ARG BASE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1-bookworm

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin ioi-run && cp target/release/ioi-run /ioi-run

FROM ${BASE} AS runtime
# g++ and gcc compile solutions, graders, checkers and managers; bash runs script mode; python3
# runs cf_python3 submissions, Codeforces checker.py and TPS gen.py. Installed only when the
# base lacks them.
RUN set -eu; missing=""; \
    for tool in g++ gcc bash python3; do \
        command -v "$tool" >/dev/null || missing="$missing $tool"; \
    done; \
    [ -f /etc/ssl/certs/ca-certificates.crt ] || missing="$missing ca-certificates"; \
    if [ -n "$missing" ]; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; \
        rm -rf /var/lib/apt/lists/*; \
    fi
COPY docker/entrypoint.sh /usr/local/bin/ioi-run-entrypoint
COPY docker/healthcheck.py /usr/local/bin/ioi-run-healthcheck
# The compile cache (precompiled headers are ~100 MB each) and Hugging Face downloads live in
# one volume, root's only: a program in the cache is run by every later judge, so a cache that
# others may write lets them plant what scores are made with (docs/threat-model.md#the-container).
# A container run with --user mounts a volume of its own.
RUN mkdir -p /cache /data && chmod 0755 /cache /data
ENV IOI_RUN_CACHE=/cache/ioi-run HF_HOME=/cache/huggingface
VOLUME ["/cache"]
WORKDIR /data
# `serve`'s default port (Piston's); publish more for `serve --ports 2000-2015`.
EXPOSE 2000
# `serve` is healthy when it answers GET /api/v2/runtimes; other commands are healthy while they
# run (docker/healthcheck.py). podman keeps it with `podman build --format docker`.
HEALTHCHECK --interval=30s --timeout=15s --start-period=60s --retries=3 \
    CMD ["python3", "/usr/local/bin/ioi-run-healthcheck"]
ENTRYPOINT ["/usr/local/bin/ioi-run-entrypoint"]
CMD ["doctor"]

FROM runtime
COPY --from=build /ioi-run /usr/local/bin/ioi-run
