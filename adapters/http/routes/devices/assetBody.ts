/**
 * Asset bodies as the AllThingsTalk device SDKs send them (DESIGN.md §5): the Python SDK posts
 * `{Name, Title, Description, Is, Profile}`, the Go and Node SDKs `{name, is, profile}`, the Java
 * SDK lower-case keys; and the check of an asset's profile, for the asset routes and for the assets
 * a device is created with.
 */
import { isPlainObject } from '../../../../engine/kernel/isPlainObject.ts';
import { checkProfile } from '../../../../engine/uplink/admission/profile.ts';
import { invalidField } from '../../request/check.ts';

const SDK_KEYS: Record<string, string> = { Name: 'name', Title: 'title', Description: 'description', Is: 'is', Profile: 'profile' };

/**
 * The SDKs' spellings → ours: capitalised keys mapped (a lower-case key given as well wins), null
 * optional fields dropped (the Python SDK sends `Title: null` when none was set), `is` lower-cased.
 */
export function normaliseAssetBody(raw: unknown): unknown {
  if (!isPlainObject(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const mapped = SDK_KEYS[key];
    if (mapped === undefined) out[key] = value;
    else if (!Object.hasOwn(raw, mapped)) out[mapped] = value;
  }
  for (const key of ['title', 'description', 'profile']) if (out[key] === null) delete out[key];
  if (typeof out.is === 'string') out.is = out.is.toLowerCase();
  return out;
}

/**
 * 422 for a profile outside the JSON Schema subset admission compiles (engine/uplink/admission/
 * profile.ts): saved as is, it would refuse every value sent to the asset.
 */
export function checkAssetProfile(profile: Record<string, unknown> | undefined, path: string): void {
  if (profile === undefined) return;
  const problem = checkProfile(profile);
  if (problem !== undefined) throw invalidField(path, problem);
}
