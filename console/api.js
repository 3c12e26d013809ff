// The console's only way to the API: same origin, bearer token from sessionStorage (never in a
// URL, never logged), errors turned into the API's own problem+json message.
const KEY = 'fleetstream.token';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (token) => sessionStorage.setItem(KEY, token),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer that was not 2xx: `problem` is the API's problem+json body when it sent one. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problemMessage(status, problem));
    this.status = status;
    this.problem = problem;
    this.code = problem?.code;
  }
}

/** "title: detail" plus each failing field, as the API wrote them. */
export function problemMessage(status, problem) {
  if (!problem) return `HTTP ${status}`;
  const head = problem.detail && problem.detail !== problem.title ? problem.detail : (problem.title ?? `HTTP ${status}`);
  const fields = Array.isArray(problem.errors) ? problem.errors.map((e) => `${e.path}: ${e.message}`) : [];
  const extra = fields.filter((f) => !head.includes(f));
  return [head, ...extra].join('; ');
}

export function authHeaders(extra = {}) {
  const token = session.token();
  return token ? { authorization: `Bearer ${token}`, ...extra } : extra;
}

export async function readProblem(response) {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json')) return undefined;
  try { return await response.json(); } catch { return undefined; }
}

/** JSON in, JSON out; throws ApiError. `path` segments must already be encoded (see `p`). */
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = authHeaders(body === undefined ? {} : { 'content-type': 'application/json' });
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store' });
  if (!response.ok) throw new ApiError(response.status, await readProblem(response));
  if (response.status === 204) return undefined;
  return response.json();
}

/** A path from a template: every substituted value is URL-encoded. */
export function p(strings, ...values) {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ''), '');
}
