/**
 * What a registry change does to the embedded edge's connections and sessions (once the lookups have
 * applied it): the connections of a revoked token, a deleted device or a user who left a ground are
 * closed (MQTT 5: DISCONNECT 0x98 Administrative action), a changed device is read again at its next
 * uplink, and after a resync every open connection proves its token and device again.
 */
import type { RegistryLookups } from '../../../engine/access/RegistryLookups.ts';
import { toFleetError } from '../../../engine/kernel/errors.ts';
import type { Logger } from '../../../engine/kernel/logger.ts';
import type { RegistryChange } from '../../../engine/ports/registryChanges.ts';
import type { EdgeConnection } from './EdgeConnection.ts';
import { Reason } from './reasonCodes.ts';
import type { Sessions } from './Sessions.ts';

export interface ChangedEdge {
  readonly connections: ReadonlySet<EdgeConnection>;
  readonly access: RegistryLookups;
  readonly sessions: Sessions;
  readonly logger: Logger;
}

export function applyRegistryChange(change: RegistryChange, edge: ChangedEdge): void {
  const { connections, access, sessions, logger } = edge;
  const closeWhere = (match: (conn: EdgeConnection) => boolean, text: string) => {
    for (const conn of [...connections]) if (conn.phase === 'open' && match(conn)) conn.disconnect(Reason.ADMINISTRATIVE_ACTION, text);
  };
  switch (change.kind) {
    case 'token-revoked':
      closeWhere((conn) => conn.tokenHash === change.tokenHash, 'the token was revoked');
      break;
    case 'device-deleted':
      closeWhere((conn) => conn.deviceId === change.deviceId, 'the device was deleted');
      sessions.forgetDevice(change.deviceId);
      sessions.endOwner(`device:${change.deviceId}`);
      break;
    case 'device-changed':
      for (const conn of connections) if (conn.deviceId === change.deviceId) conn.device = undefined;
      break;
    case 'membership-changed': {
      const affected = [...connections].filter((conn) => conn.phase === 'open' && conn.principal?.scope === 'user'
        && conn.principal.subjectId === change.userId
        && [...conn.session!.subscriptions.values()].some((s) => s.groundId === change.groundId));
      if (affected.length === 0) break;
      access.isMember(change.groundId, change.userId).then((member) => {
        if (!member) for (const conn of affected) conn.disconnect(Reason.ADMINISTRATIVE_ACTION, 'no longer a member of the ground');
      }, (error: unknown) => logger.error('mqtt: membership check failed', { error: toFleetError(error) }));
      break;
    }
    case 'resync':
      // Changes may have been missed: every open connection proves its token and device again.
      for (const conn of [...connections]) {
        if (conn.phase !== 'open') continue;
        conn.device = undefined;
        const deviceId = conn.deviceId;
        Promise.all([access.principal(conn.token), deviceId === undefined ? true : access.device(deviceId)]).then(([principal, device]) => {
          if (principal === undefined || device === undefined) conn.disconnect(Reason.ADMINISTRATIVE_ACTION, 'the token or the device is no longer valid');
        }, (error: unknown) => logger.error('mqtt: re-checking a connection failed', { error: toFleetError(error) }));
      }
      break;
  }
}
