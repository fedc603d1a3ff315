# syntax=docker/dockerfile:1
# Redline as a GitHub App (`redline serve`): a build stage, then a slim runtime with git,
# CA certificates and a non-root user. The cache of repository mirrors and the SQLite
# queue live on the volume /var/lib/redline.
#
#   docker build -t redline .
#   docker run -p 3000:3000 -v redline-data:/var/lib/redline \
#     -e GITHUB_APP_ID -e GITHUB_APP_PRIVATE_KEY -e GITHUB_WEBHOOK_SECRET -e OPENAI_API_KEY redline

FROM docker.io/library/rust:1-slim-bookworm AS build
WORKDIR /src
# Baked into the binary (SARIF informationUri, `redline init`'s action reference).
ARG REDLINE_REPOSITORY_URL=""
ENV REDLINE_REPOSITORY_URL=${REDLINE_REPOSITORY_URL}
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin redline \
 && cp target/release/redline /usr/local/bin/redline

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/redline --create-home redline
COPY --from=build /usr/local/bin/redline /usr/local/bin/redline
USER redline
WORKDIR /var/lib/redline
ENV REDLINE_CACHE_DIR=/var/lib/redline/cache \
    REDLINE_DATABASE_URL=sqlite:///var/lib/redline/redline.db
VOLUME ["/var/lib/redline"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl --fail --silent --max-time 4 http://127.0.0.1:3000/healthz || exit 1
ENTRYPOINT ["redline"]
CMD ["serve"]
