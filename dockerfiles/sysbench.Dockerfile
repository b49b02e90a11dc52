# edgebench sysbench, ONLINE mode (needs registry access): Debian's sysbench 1.0
# behind tools/steps. Build context is tools/steps:
#   docker build -f dockerfiles/sysbench.Dockerfile -t edgebench/sysbench tools/steps
# Offline hosts use offline-tool.Dockerfile with the host's own binary instead.

FROM golang:1.22-alpine AS steps
WORKDIR /src
COPY go.mod main.go ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/steps .

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends sysbench && rm -rf /var/lib/apt/lists/*
COPY --from=steps /out/steps /usr/local/bin/steps
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/steps"]
