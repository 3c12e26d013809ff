/**
 * The LPWAN applications of a configuration document (schemas/lpwan.ts LpwanApplicationsDocument),
 * held in memory: the embedded implementation of engine/ports/lpwanApplications.ts. Secrets are
 * kept only as SHA-256 digests; a webhook's secret is found by its digest, like bearer tokens
 * (engine/access/tokens.ts: a secret of enough entropy needs no slow hash).
 */
import { createHash } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { FleetError } from '../kernel/errors.ts';
import type { LpwanApplication, LpwanApplications } from '../ports/lpwanApplications.ts';
import { LpwanApplicationsDocument } from '../../schemas/lpwan.ts';

const checkDocument = Compile(LpwanApplicationsDocument);

export function secretDigest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function invalid(field: string, message: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `LPWAN applications: ${field}: ${message}`, { detail: { field } });
}

export class StaticLpwanApplications implements LpwanApplications {
  readonly #bySecret = new Map<string, LpwanApplication>();
  readonly #byId = new Map<string, LpwanApplication>();

  /** Checks the document; VALIDATION_FAILED names the first offending field (`applications.2.secret`). */
  constructor(document: unknown) {
    if (!checkDocument.Check(document)) {
      const first = checkDocument.Errors(document)[0];
      const field = (first?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || 'document';
      throw invalid(field, first?.message ?? 'invalid');
    }
    document.applications.forEach((config, i) => {
      const field = `applications.${i}`;
      if ((config.secret === undefined) === (config.secretSha256 === undefined)) {
        throw invalid(field, 'give exactly one of secret and secretSha256');
      }
      if (config.downlink !== undefined && config.networkId !== 'thethingsnetwork') {
        throw invalid(`${field}.downlink`, `network ${config.networkId} has no downlink`);
      }
      const idKey = `${config.networkId}\n${config.applicationId}`;
      if (this.#byId.has(idKey)) throw invalid(`${field}.applicationId`, `${config.networkId} application ${config.applicationId} appears twice`);
      const digest = config.secretSha256?.toLowerCase() ?? secretDigest(config.secret!);
      const secretKey = `${config.networkId}\n${digest}`;
      // One secret names one application: otherwise an uplink could not tell which one sent it.
      if (this.#bySecret.has(secretKey)) throw invalid(`${field}.secret`, `another ${config.networkId} application has the same secret`);
      const app: LpwanApplication = Object.freeze({
        networkId: config.networkId,
        applicationId: config.applicationId,
        ...(config.downlink === undefined ? {} : { downlink: Object.freeze({ ...config.downlink }) }),
      });
      this.#byId.set(idKey, app);
      this.#bySecret.set(secretKey, app);
    });
  }

  get size(): number {
    return this.#byId.size;
  }

  async authenticate(networkId: string, secret: string): Promise<LpwanApplication | undefined> {
    if (typeof secret !== 'string' || secret.length === 0 || secret.length > 512) return undefined;
    return this.#bySecret.get(`${networkId}\n${secretDigest(secret)}`);
  }

  async get(networkId: string, applicationId: string): Promise<LpwanApplication | undefined> {
    return this.#byId.get(`${networkId}\n${applicationId}`);
  }
}
