// A sandbox's archives in the object store (SNAPSHOT_S3_*): the cold tier and POST …/snapshot send
// them there (storage.ts, lifecycle.ts); a resume or a fork fetches them back. The record keeps the
// opaque object names (snapshotRemote); each object is sealed and bound to the sandbox and to what
// it holds, so one copied over another's name does not open. Uploads leave the local files alone
// (the caller removes them once the record names the objects), so a failure loses nothing.
import { RuntimeError } from '../errors.ts';
import type { S3SnapshotStore } from '../snapshot-store/s3-store.ts';
import type { SandboxContext } from './context.ts';
import type { SandboxRecord } from './record.ts';

export type RemoteSnapshot = NonNullable<SandboxRecord['snapshotRemote']>;
type Kind = 'workspace' | 'image';

function objects(ctx: SandboxContext, rec: SandboxRecord): S3SnapshotStore {
  if (ctx.objects) return ctx.objects;
  throw new RuntimeError(
    'CONFIG_INVALID',
    `sandbox ${rec.id}'s snapshot is in an object store, but this operator has none configured; set SNAPSHOT_S3_BUCKET (and the other SNAPSHOT_S3_* it was stored with) again`,
  );
}

const namesOf = (r: RemoteSnapshot | null | undefined): string[] =>
  r ? [r.workspace, r.image].filter((n): n is string => Boolean(n)) : [];

/** Every object the record names: the snapshot's and any an interrupted upload left. */
const allNames = (rec: SandboxRecord): string[] => [
  ...namesOf(rec.snapshotRemote),
  ...(rec.snapshotOrphans ?? []),
];

/** Records objects whose deletion failed, so a later drop or purge deletes them. */
async function keepOrphans(ctx: SandboxContext, id: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  await ctx.records.patch(id, (r) => ({
    ...r,
    snapshotOrphans: [...new Set([...(r.snapshotOrphans ?? []), ...names])],
  }));
}

/**
 * Uploads the given archives (sealed) as new objects and returns what the record should name: the
 * new objects, plus the previous workspace object when no new workspace was given and the
 * previous one belongs to the same snapshot. On failure the new objects are removed (best effort)
 * (or, where the store refuses that too, recorded as orphans) and the error thrown; the previous objects are dropped only after success (best effort).
 */
export async function offloadArchives(
  ctx: SandboxContext,
  rec: SandboxRecord,
  files: { workspace?: string | undefined; image?: string | undefined },
  imageId: string | null,
): Promise<RemoteSnapshot> {
  const store = objects(ctx, rec);
  const prev = rec.snapshotRemote ?? null;
  const made: string[] = [];
  const out: RemoteSnapshot = { imageId, workspace: null, image: null, bytes: 0 };
  try {
    for (const kind of ['workspace', 'image'] as const) {
      const file = files[kind];
      if (!file) continue;
      const name = store.newName();
      made.push(name);
      out.bytes += await store.put(name, { sandboxId: rec.id, kind }, file);
      out[kind] = name;
    }
  } catch (e) {
    // The store that failed the upload may refuse the clean-up too: then the record names what
    // was made, so a later try, drop or purge deletes it (nothing is left unnamed in the bucket).
    await store.remove(made).catch(() => keepOrphans(ctx, rec.id, made));
    throw e;
  }
  if (!out.workspace && prev?.workspace && prev.imageId === imageId) out.workspace = prev.workspace;
  const stale = namesOf(prev).filter((n) => n !== out.workspace && n !== out.image);
  await store
    .remove(stale)
    .catch((err: unknown) =>
      ctx.log.warn({ sandboxId: rec.id, err: String(err) }, 'could not delete an older snapshot object'),
    );
  // What an earlier interrupted upload left: deleted now that the store answers again.
  const orphans = ctx.records.get(rec.id)?.snapshotOrphans ?? rec.snapshotOrphans ?? [];
  if (orphans.length)
    await store.remove(orphans).then(
      () =>
        ctx.records.patch(rec.id, (r) => ({
          ...r,
          snapshotOrphans: (r.snapshotOrphans ?? []).filter((n) => !orphans.includes(n)),
        })),
      (err: unknown) =>
        ctx.log.warn(
          { sandboxId: rec.id, err: String(err) },
          'could not delete objects of an interrupted upload',
        ),
    );
  ctx.log.debug({ sandboxId: rec.id, bytes: out.bytes }, 'snapshot archives sent to the object store');
  return out;
}

/** Whether the record names a `kind` object (for an image: of the snapshot image it still names). */
export function hasRemote(rec: SandboxRecord, kind: Kind): boolean {
  const r = rec.snapshotRemote;
  if (!r) return false;
  return kind === 'workspace' ? Boolean(r.workspace) : Boolean(r.image) && r.imageId === rec.snapshotImageId;
}

/** Fetches the `kind` archive into `dest` (authenticated whole before it appears there). */
export async function fetchArchive(
  ctx: SandboxContext,
  rec: SandboxRecord,
  kind: Kind,
  dest: string,
): Promise<void> {
  const name = rec.snapshotRemote?.[kind];
  if (!name) throw new RuntimeError('INTERNAL', `sandbox ${rec.id} has no ${kind} object`);
  await objects(ctx, rec).get(name, { sandboxId: rec.id, kind }, dest);
  ctx.log.debug({ sandboxId: rec.id, kind }, 'snapshot archive fetched from the object store');
}

/** Deletes the sandbox's objects (throws SNAPSHOT_STORE_UNAVAILABLE, so a delete can be retried). */
export async function dropRemote(ctx: SandboxContext, rec: SandboxRecord): Promise<void> {
  const cur = ctx.records.get(rec.id) ?? rec;
  const names = [...new Set([...allNames(rec), ...allNames(cur)])];
  if (names.length === 0) return;
  await objects(ctx, rec).remove(names);
  if (cur.snapshotOrphans?.length) await ctx.records.patch(rec.id, (r) => ({ ...r, snapshotOrphans: [] }));
}

/** As dropRemote, but a failure is logged and the objects stay named (returned) for a later delete. */
export async function dropRemoteQuietly(
  ctx: SandboxContext,
  rec: SandboxRecord,
): Promise<RemoteSnapshot | null> {
  try {
    await dropRemote(ctx, rec);
    return null;
  } catch (err) {
    ctx.log.warn(
      { sandboxId: rec.id, err: String(err) },
      'could not delete stale snapshot objects; kept for the next try',
    );
    return rec.snapshotRemote ?? null;
  }
}
