// The Dockerfile of the sandbox image: the agent user, the sidecar bundle, tini as init.
export const AGENT_UID = 1000;
export const AGENT_GID = 1000;
export const SIDECAR_PATH = '/opt/sidecar/sidecar.cjs';

export function sandboxDockerfile(baseTag: string, opts: { withHarnesses: boolean }): string {
  // Layer order matters: the user layer stays cached, so a sidecar change rebuilds only the COPY.
  return `FROM ${baseTag}
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
RUN groupadd --gid ${AGENT_GID} agent \\
 && useradd --uid ${AGENT_UID} --gid ${AGENT_GID} --home-dir /home/agent --create-home --shell /bin/bash agent \\
 && mkdir -p /home/agent/workspace \\
 && chown -R ${AGENT_UID}:${AGENT_GID} /home/agent
${
  opts.withHarnesses
    ? `COPY harnesses/ /opt/harnesses/
ENV PATH=/opt/harnesses/node_modules/.bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
`
    : ''
}ENV SIDECAR_PORT=8080 AGENT_WORKSPACE_ROOT=/home/agent AGENT_SUBPROCESS_UID=${AGENT_UID} AGENT_SUBPROCESS_GID=${AGENT_GID} NODE_ENV=production
COPY sidecar.cjs ${SIDECAR_PATH}
WORKDIR /home/agent
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "${SIDECAR_PATH}"]
`;
}
