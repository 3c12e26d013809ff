/**
 * OpenAPI 3.1 document of the edge, built from the route descriptions the router validates with.
 * OpenAPI 3.1 schema objects are JSON Schema 2020-12, and TypeBox schemas are plain JSON Schema, so
 * they are embedded unchanged (a deep copy through JSON drops nothing TypeBox needs).
 */
import { STATUS_CODES } from 'node:http';
import type { TSchema } from 'typebox';
import { Problem } from '../../schemas/edge.ts';
import { operationIdOf, type RegisteredRoute } from './EdgeRouter.ts';
import { PROBLEM_CONTENT_TYPE } from './problemResponse.ts';

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

type Json = Record<string, unknown>;

function schema(s: TSchema): Json {
  return JSON.parse(JSON.stringify(s)) as Json;
}

function parameters(where: 'path' | 'query' | 'header', s: TSchema | undefined): Json[] {
  if (s === undefined) return [];
  const object = s as { properties?: Record<string, TSchema>; required?: string[] };
  const required = new Set(object.required ?? []);
  return Object.entries(object.properties ?? {}).map(([name, p]) => {
    const out: Json = { name, in: where, required: where === 'path' || required.has(name), schema: schema(p) };
    const description = (p as { description?: unknown }).description;
    if (typeof description === 'string') out.description = description;
    return out;
  });
}

function content(map: Record<string, TSchema>): Json {
  return Object.fromEntries(Object.entries(map).map(([type, s]) => [type, { schema: schema(s) }]));
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };

function problemResponse(status: number): Json {
  const out: Json = {
    description: STATUS_CODES[status] ?? 'Error',
    content: { [PROBLEM_CONTENT_TYPE]: { schema: PROBLEM_REF } },
  };
  if (status === 429 || status === 503) {
    out.headers = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };
  }
  return out;
}

export function openApiDocument(routes: readonly RegisteredRoute[], info: OpenApiInfo): Json {
  const paths: Record<string, Json> = {};
  for (const { spec, authenticated } of routes) {
    const statuses = new Set(spec.errors ?? []);
    if (authenticated) [401, 403, 429].forEach((s) => statuses.add(s));
    if (spec.params) statuses.add(400);
    if (spec.query) statuses.add(422);
    statuses.add(500);
    const responses: Json = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const out: Json = { description: r.description };
      if (r.content) out.content = content(r.content);
      if (r.headers) {
        out.headers = Object.fromEntries(Object.entries(r.headers).map(([name, h]) => [name, { description: h.description, schema: schema(h.schema) }]));
      }
      responses[status] = out;
    }
    for (const status of [...statuses].sort()) responses[String(status)] ??= problemResponse(status);
    for (const method of spec.methods) {
      const operation: Json = {
        operationId: operationIdOf(spec, method),
        summary: spec.summary,
        tags: spec.tags,
        parameters: [...parameters('path', spec.params), ...parameters('query', spec.query), ...parameters('header', spec.headers)],
        responses,
      };
      if (spec.description) operation.description = spec.description;
      if (spec.body) operation.requestBody = { required: spec.body.required, content: content(spec.body.content) };
      operation.security = authenticated ? [{ bearer: [] }] : [];
      (paths[spec.path] ??= {})[method] = operation;
    }
  }
  return {
    openapi: '3.1.0',
    info,
    paths,
    components: {
      schemas: { Problem: schema(Problem) },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'device (fsd_…), user (fsu_…) or partner (fsp_…) token' },
      },
    },
  };
}
