// Helpers for OpenAPI documents built from TypeBox schemas: plain JSON Schema without
// TypeBox's symbols or $id, and the standard error-response entry.
import type { TSchema } from '@sinclair/typebox';

export function jsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === '$id' ? undefined : value))) as Record<string, unknown>;
}

export function jsonContent(ref: string): Record<string, unknown> {
  return { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } };
}
