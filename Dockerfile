# Fleetstream image for compose.yaml: the project with its pinned Node 24 (from npm).
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV HTTP_HOST=0.0.0.0 DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["node", "--liftoff-only", "--expose-gc", "--no-allocation-site-pretenuring", "--external-memory-accounted-in-global-limit", "bin/fleetstream.ts"]
CMD ["start"]
