FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
ENV SVC_DATA_DIR=/app/data
EXPOSE 8080
CMD ["node", "dist/cli/main.js", "serve", "--host", "0.0.0.0", "--port", "8080"]
