# A Debian 12 image with ivytrace built and tested, by the same setup script CI and the README use.
FROM debian:12
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates sudo && rm -rf /var/lib/apt/lists/*
WORKDIR /src/ivytrace
COPY . .
RUN bash scripts/setup.sh
ENV PATH=/src/ivytrace/build:/src/ivytrace/.venv/bin:$PATH
CMD ["bash", "scripts/test.sh"]
