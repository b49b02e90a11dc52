# edgebench iomt (LZW, AES, k-means batch workloads), ONLINE mode (needs registry
# access): multi-stage build as the paper's artifacts did. Build context is the app:
#   docker build -f dockerfiles/iomt.Dockerfile -t edgebench/iomt apps/iomt
# Offline hosts use offline-go.Dockerfile with a prebuilt binary instead.

FROM golang:1.22-alpine AS build
WORKDIR /src
COPY go.mod ./
COPY *.go ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/app .

FROM scratch
COPY --from=build /out/app /app
# Arguments after the image name choose the workload, e.g.
#   docker run --rm edgebench/iomt -workload aes -size 10MB
ENTRYPOINT ["/app"]
