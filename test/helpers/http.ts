// Small HTTP helpers over fetch for the integration tests.
import { TEST_KEY } from './server';

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; key?: string | null } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.key !== null) headers['api-key'] = init.key ?? TEST_KEY;
  if (init.body !== undefined && !('content-type' in headers) && !('Content-Type' in headers)) {
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(url, { method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'), headers, body: init.body });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, text };
}

export function postJson(url: string, value: unknown, headers: Record<string, string> = {}, key?: string | null) {
  return request(url, { method: 'POST', body: JSON.stringify(value), headers, key });
}
