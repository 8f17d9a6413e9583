// The Dockerfiles: the sandbox image (agent user, sidecar bundle, tini as init) and the harness
// layer image it can build FROM (the same user plus the harness CLIs and a newer Node).
export const AGENT_UID = 1000;
export const AGENT_GID = 1000;
export const SIDECAR_PATH = '/opt/sidecar/sidecar.cjs';
export const HARNESS_DIR = '/opt/harnesses';
/**
 * Root-only (0700) directory a CVM mounts the dstack agent's socket into: the sidecar (root)
 * reaches it, the agent user (uid 1000) cannot traverse to it, so it gets no quotes or keys.
 * Its layer carries a small file: a layer of only a directory has size 0 in the image history,
 * which the config-only snapshot scrub (runtime image-scrub.ts) cannot tell from an empty layer.
 */
export const TEE_SOCKET_DIR = '/run/tee';

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const userLayer = `RUN groupadd --gid ${AGENT_GID} agent \\
 && useradd --uid ${AGENT_UID} --gid ${AGENT_GID} --home-dir /home/agent --create-home --shell /bin/bash agent \\
 && mkdir -p /home/agent/workspace \\
 && chown -R ${AGENT_UID}:${AGENT_GID} /home/agent
`;

/**
 * `agent-sandbox-harness-layer:<hash>`: the base, the agent user and `/opt/harnesses` (an npm
 * install of HARNESS_PACKAGES). Built once per package list, so a sidecar change never reinstalls it.
 */
export function harnessLayerDockerfile(baseTag: string): string {
  return `FROM ${baseTag}
ENV PATH=${SYSTEM_PATH} LANG=C.UTF-8
${userLayer}COPY harnesses/ ${HARNESS_DIR}/
`;
}

/**
 * The sandbox image FROM `fromTag`: the Debian base, or (withHarnesses) the harness layer image,
 * which already has the user. Layer order matters: the user layer stays cached, so a sidecar
 * change rebuilds only the COPY.
 */
export function sandboxDockerfile(fromTag: string, opts: { withHarnesses: boolean }): string {
  // node_modules/.bin holds `node` (the registry's Node 24) ahead of Debian's, and the four CLIs.
  const bin = `${HARNESS_DIR}/node_modules/.bin`;
  const path = opts.withHarnesses ? `${bin}:${SYSTEM_PATH}` : SYSTEM_PATH;
  // Every command, terminal and agent program runs in a login shell (bash -l), and Debian's
  // /etc/profile resets PATH: profile.d puts the CLIs (and their Node) back in front.
  const loginPath = opts.withHarnesses
    ? `RUN printf '%s\\n' 'case ":$PATH:" in *":${bin}:"*) ;; *) PATH="${bin}:$PATH" ;; esac' > /etc/profile.d/agent-harnesses.sh\n`
    : '';
  return `FROM ${fromTag}
ENV PATH=${path} LANG=C.UTF-8
${opts.withHarnesses ? '' : userLayer}${loginPath}ENV SIDECAR_PORT=8080 AGENT_WORKSPACE_ROOT=/home/agent AGENT_SUBPROCESS_UID=${AGENT_UID} AGENT_SUBPROCESS_GID=${AGENT_GID} NODE_ENV=production
RUN install -d -m 0700 -o root -g root ${TEE_SOCKET_DIR} \\
 && printf 'root only: a CVM mounts its TEE socket here\\n' > ${TEE_SOCKET_DIR}/README
COPY sidecar.cjs sidecar-app.cjs /opt/sidecar/
WORKDIR /home/agent
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "${SIDECAR_PATH}"]
`;
}
