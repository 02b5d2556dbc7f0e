# ioi-run in a container. Build: docker build -t ioi-run .
# Run (the sandbox creates namespaces and cgroups, which Docker's defaults forbid):
#   docker run --rm --privileged --cgroupns=private -v "$PWD/work:/work" ioi-run ioi-run doctor
# See README.md, "Running in a container".
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin ioi-run

FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++ ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/ioi-run /usr/local/bin/ioi-run
COPY docker/entrypoint.sh /usr/local/bin/ioi-run-entrypoint
ENTRYPOINT ["/usr/local/bin/ioi-run-entrypoint"]
CMD ["ioi-run", "doctor"]
