# edgebench node-http, ONLINE mode (needs registry access): the paper's
# image (the paper used Node v24.3.0; pin node:24.3.0-alpine to match it
# exactly). Build context is the app directory:
#   docker build -f dockerfiles/node-http.Dockerfile -t edgebench/node-http apps/node-http
# Offline hosts use offline-node.Dockerfile with a copied rootfs instead.

FROM node:24-alpine
WORKDIR /app
# No npm dependencies, so no `npm install` step.
COPY package.json server.js ./
EXPOSE 8080
# Exec form: node is PID 1 and receives SIGTERM from `docker stop` directly
# (server.js installs its own handler, as PID 1 has no default one).
CMD ["node", "server.js"]
