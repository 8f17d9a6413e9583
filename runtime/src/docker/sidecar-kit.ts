// The sidecar for images that do not carry it (images pulled from a registry): a read-only volume,
// copied once from our own sandbox image, that holds everything the root sidecar process runs —
// tini (static), Node with every shared library it loads and the dynamic loader, the sidecar
// bundles and an empty OpenSSL config. The sidecar starts through that loader with that library
// path and no cache, so no code of the foreign image (its libc, loader, NSS modules, OpenSSL
// config or providers) ever runs as root; the agent's commands run the image's own programs as
// uid 1000, as in our image.
import type Docker from 'dockerode';
import { RuntimeError } from '../errors.ts';
import { dockerMessage } from './driver.ts';
import { LABEL_KIND, LABEL_MANAGED_BY, MANAGED_BY_VALUE } from './labels.ts';

/** Where the kit volume is mounted in a sandbox (a top-level path: no component of the image's). */
export const KIT_MOUNT = '/.agent-sandbox';
/** The kit's own directory inside the volume (made by one rename, so it is whole or absent). */
export const KIT_DIR = `${KIT_MOUNT}/kit`;
const LOADER = 'ld-linux-x86-64.so.2';
/**
 * Debian's Node loads some of its own builtins (cjs-module-lexer, acorn, undici…) from this fixed
 * path, so a sandbox of a pulled image gets our copy of it, read-only, from a second kit volume.
 */
export const KIT_NODE_SHARE = '/usr/share/nodejs';
/** The volume holding our KIT_NODE_SHARE, next to the kit volume `kit`. */
export const kitShareVolume = (kit: string) => `${kit}-nodejs`;

/** Entrypoint and command of a sandbox whose image does not carry the sidecar. */
export const KIT_ENTRYPOINT = [`${KIT_DIR}/bin/tini`, '--'];
export const KIT_CMD = [
  `${KIT_DIR}/lib/${LOADER}`,
  '--inhibit-cache',
  '--library-path',
  `${KIT_DIR}/lib`,
  `${KIT_DIR}/bin/node`,
  `${KIT_DIR}/sidecar/sidecar.cjs`,
];
/** Env the kit's sidecar needs (over the image's): our OpenSSL config, no image file as HOME. */
export const KIT_ENV: Readonly<Record<string, string>> = {
  OPENSSL_CONF: `${KIT_DIR}/etc/openssl.cnf`,
  OPENSSL_MODULES: `${KIT_DIR}/lib/ossl-modules`,
  HOME: KIT_MOUNT,
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
};

// Runs in a container of OUR image (root there is our own code): copies the closure of
// /usr/bin/node as ldd lists it, the loader, tini-static and the bundles into a staging
// directory, then renames it into place; a kit already there is left as it is.
const POPULATE = `set -eu
if ! test -e /share/.complete; then
  cp -rL ${KIT_NODE_SHARE}/. /share/
  chmod -R a+rX,go-w /share
  touch /share/.complete
fi
test -d /kit/kit && exit 0
s=/kit/stage.$$
mkdir -p "$s/bin" "$s/lib" "$s/sidecar" "$s/etc"
cp -L /usr/bin/tini-static "$s/bin/tini"
cp -L /usr/bin/node "$s/bin/node"
for f in $(ldd /usr/bin/node | sed -n 's/.*=> \\(\\/[^ ]*\\).*/\\1/p'); do cp -L "$f" "$s/lib/"; done
cp -L /lib64/${LOADER} "$s/lib/${LOADER}"
cp /opt/sidecar/*.cjs "$s/sidecar/"
printf '# agent-sandbox: the sidecar loads no OpenSSL module or provider\\n' > "$s/etc/openssl.cnf"
chmod -R a+rX,go-w "$s"
mv -T "$s" /kit/kit 2>/dev/null || rm -rf "$s"
test -x /kit/kit/bin/node
`;

/** The kit volume made from `image` (our sandbox image), created and filled if needed. */
export async function ensureSidecarKit(docker: Docker, image: string): Promise<string> {
  let imageId: string;
  try {
    imageId = (await docker.getImage(image).inspect()).Id;
  } catch (e) {
    throw new RuntimeError('DOCKER_ERROR', `the sandbox image ${image} is missing: ${dockerMessage(e)}`, {
      cause: e,
    });
  }
  const name = `agent-sandbox-kit-${imageId.replace(/^sha256:/, '').slice(0, 16)}`;
  let id: string | undefined;
  try {
    const c = await docker.createContainer({
      Image: imageId,
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: [POPULATE],
      User: '0:0',
      Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_KIND]: 'kit' },
      HostConfig: {
        NetworkMode: 'none',
        Mounts: [
          {
            Type: 'volume',
            Source: name,
            Target: '/kit',
            VolumeOptions: {
              NoCopy: true,
              Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_KIND]: 'kit' },
            },
          } as unknown as Docker.MountSettings,
          {
            Type: 'volume',
            Source: kitShareVolume(name),
            Target: '/share',
            VolumeOptions: {
              NoCopy: true,
              Labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_KIND]: 'kit' },
            },
          } as unknown as Docker.MountSettings,
        ],
      },
    });
    id = c.id;
    await c.start();
    const r = (await c.wait()) as { StatusCode: number };
    if (r.StatusCode !== 0) {
      const logs = String(await c.logs({ stdout: true, stderr: true })).slice(-400);
      throw new RuntimeError('DOCKER_ERROR', `filling the sidecar kit volume ${name} failed: ${logs}`);
    }
    return name;
  } catch (e) {
    if (e instanceof RuntimeError) throw e;
    throw new RuntimeError(
      'DOCKER_ERROR',
      `filling the sidecar kit volume ${name} failed: ${dockerMessage(e)}`,
      {
        cause: e,
      },
    );
  } finally {
    if (id)
      await docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => {});
  }
}
