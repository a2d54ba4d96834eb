# Postline as a container: Node 24 runs the TypeScript sources directly (type stripping), no build step.
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Runtime dependencies only: the dev tools (and the `node` package, whose Node this image already has) stay out.
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY . .
# Embedded mode keeps its data (and a generated secret key) here; with DATABASE_URL only the secret key.
ENV POSTLINE_DATA_DIR=/app/data
RUN mkdir -p /app/data && chown -R node:node /app/data
USER node
EXPOSE 3000 2587 2465 2525
CMD ["npm", "start"]
