# edgebench go-http, OFFLINE mode: no base image is pulled. The build context
# must contain the prebuilt static binary named `app`, e.g.
#   CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o CTX/app ./apps/go-http
#   docker build -f dockerfiles/offline-go.Dockerfile -t edgebench/go-http CTX
# The resulting image is equivalent to the final stage of go-http.Dockerfile.

FROM scratch
COPY app /app
EXPOSE 8080
ENTRYPOINT ["/app"]
