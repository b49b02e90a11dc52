# edgebench node-http, OFFLINE mode: no base image is pulled. The build
# context must contain rootfs/ laid out as the final filesystem:
#   rootfs/usr/local/bin/node       the host's node binary
#   rootfs/<abs path of each lib>   every shared library `ldd node` lists,
#                                   including the dynamic loader
#                                   (e.g. /lib64/ld-linux-x86-64.so.2)
#   rootfs/app/server.js            apps/node-http/server.js
#   docker build -f dockerfiles/offline-node.Dockerfile -t edgebench/node-http CTX

FROM scratch
COPY rootfs/ /
WORKDIR /app
EXPOSE 8080
# Absolute paths, so nothing depends on PATH or a shell inside the image.
ENTRYPOINT ["/usr/local/bin/node", "/app/server.js"]
