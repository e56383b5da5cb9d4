# syntax=docker/dockerfile:1
# One image for every process: `docker run IMAGE server|worker|migrate` (or `cli <command>`).
# Build: docker build -t authservice .   Try it: docker compose up (compose.yaml).
# What can be checked without Docker is checked by test/ship/image.test.ts.

ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: the whole development install, then `npm run build` (dist/ and web/console/dist) ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY . .
# `npm ci` runs every install script (the pinned node, the console's own install); .dockerignore
# keeps the host's node_modules, builds and .data out of the context.
RUN npm ci --no-audit --no-fund && npm run build

# --- runtime: production dependencies only, the build's output, a non-root user ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prune-production-install.mjs scripts/
# The same install scripts/measure-production-install.mjs measures (README: production install size).
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
  && node scripts/prune-production-install.mjs node_modules \
  && npm cache clean --force
COPY sql sql
COPY --chmod=755 scripts/container-entrypoint.sh scripts/
COPY --from=build /app/dist dist
COPY --from=build /app/web/console/dist web/console/dist
# The base image's unprivileged user; the service writes nothing to its own folder.
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "dist/healthcheck.js"]
ENTRYPOINT ["/app/scripts/container-entrypoint.sh"]
CMD ["server"]
