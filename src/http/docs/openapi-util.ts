// Helpers for OpenAPI documents built from TypeBox schemas: plain JSON Schema without
// TypeBox's symbols or $id, media types with examples, and what all three documents share.
import type { TSchema } from '@sinclair/typebox';

export function jsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === '$id' ? undefined : value))) as Record<string, unknown>;
}

/** A named example shown (and sent by "Try it out") in the docs. */
export interface Example {
  summary: string;
  value: unknown;
}

/** `application/json` content referring to a component schema, with its examples when given. */
export function jsonContent(ref: string, examples?: Record<string, Example>): Record<string, unknown> {
  return { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` }, ...(examples ? { examples } : {}) } };
}

/** The project's licence, as `info.license`. */
export const LICENSE = { name: 'Apache 2.0', identifier: 'Apache-2.0' };

/** Requests go to the origin the document was loaded from. */
export const SERVERS = [{ url: '/', description: 'This service (the origin serving this document)' }];

/** A request id as the examples show it. */
export const EXAMPLE_REQUEST_ID = '5f0c6a0e-2f7b-4c3e-9d1a-7b2e8c4d9a10';

/** The `api-key` header scheme of v1 and v2. */
export const API_KEY_SCHEME = { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'api-key' } };

export interface DocumentParts {
  title: string;
  version: string;
  description: string;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, unknown>;
  securitySchemes: Record<string, unknown>;
  /** Components, as TypeBox schemas, by name. */
  schemas: Record<string, TSchema>;
  /** Requests the service makes to its clients (OpenAPI `webhooks`), by event name. */
  webhooks?: Record<string, unknown>;
}

/** An OpenAPI 3.1 document: the parts every interface's document shares around its own. */
export function openApiDocument(parts: DocumentParts): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: parts.title, version: parts.version, license: LICENSE, description: parts.description },
    servers: SERVERS,
    tags: parts.tags,
    paths: parts.paths,
    ...(parts.webhooks ? { webhooks: parts.webhooks } : {}),
    components: {
      securitySchemes: parts.securitySchemes,
      schemas: Object.fromEntries(Object.entries(parts.schemas).map(([name, schema]) => [name, jsonSchema(schema)])),
    },
  };
}
