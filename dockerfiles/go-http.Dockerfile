# edgebench go-http, ONLINE mode (needs registry access): the paper's
# multi-stage build. Build context is the app directory:
#   docker build -f dockerfiles/go-http.Dockerfile -t edgebench/go-http apps/go-http
# Offline hosts use offline-go.Dockerfile with a prebuilt binary instead.

FROM golang:1.22-alpine AS build
WORKDIR /src
# No dependencies, so go.mod alone is enough (there is no go.sum).
COPY go.mod ./
COPY *.go ./
# Static binary so it can run from an empty (scratch) image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/app .

FROM scratch
COPY --from=build /out/app /app
EXPOSE 8080
# Exec form: the app is PID 1 and receives SIGTERM from `docker stop`
# directly (it installs its own handler, as PID 1 has no default one).
ENTRYPOINT ["/app"]
