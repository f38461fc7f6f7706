# GPU Garden: one image for the Discord bot and the Slack app (see docs/deploy.md).
#
#   docker build -t gpu-garden .
#   docker run --rm -i gpu-garden gpu-garden triage - < error.log
#
# BASE_IMAGE is any Debian-like image with `python` (>= 3.11) that can make a venv; CI or an offline
# build can substitute a locally built one (docs/deploy.md, "Building without a registry").
# Offline builds: put wheels for every dependency (and setuptools + wheel) in ./wheels; when that
# folder has files, pip installs from it alone (--no-index).  No token, secret or .env goes into the
# image: settings come from the environment at run time.
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS build
# Optional package mirror for pip (a URL, never credentials: build args are visible in the history).
ARG PIP_INDEX_URL
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY . /src
RUN python -m venv /opt/gpu-garden \
    && mkdir -p /wheels \
    && if [ -d /src/wheels ]; then cp -a /src/wheels/. /wheels/; fi \
    && if [ -n "$(ls -A /wheels)" ]; then \
         echo "installing from the wheelhouse (offline)"; \
         /opt/gpu-garden/bin/pip install --no-cache-dir --no-index --find-links /wheels . ; \
       else \
         /opt/gpu-garden/bin/pip install --no-cache-dir . ; \
       fi \
    && /opt/gpu-garden/bin/gpu-garden --help > /dev/null

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="gpu-garden" \
      org.opencontainers.image.description="Support bot that answers pasted vLLM / llama.cpp / Ollama / SGLang errors" \
      org.opencontainers.image.licenses="MIT"
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/gpu-garden/bin:$PATH \
    GPU_GARDEN_DATABASE=/data/gpu-garden.sqlite3 \
    GPU_GARDEN_HEALTH_FILE=/tmp/healthy
RUN groupadd --system --gid 10001 garden \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
         --shell /usr/sbin/nologin garden \
    && mkdir -p /data /knowledge \
    && chown 10001:10001 /data
COPY --from=build /opt/gpu-garden /opt/gpu-garden
WORKDIR /data
VOLUME ["/data"]
USER 10001:10001
# The bot closes its connections and exits 0 on SIGTERM (adapters/runner.py).
STOPSIGNAL SIGTERM
# Fresh heartbeat file (touched every ~10 s while every platform is connected) = healthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["gpu-garden", "healthcheck"]
CMD ["gpu-garden"]
