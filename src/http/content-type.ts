// Media-type check shared by the JSON endpoints: `application/json` with optional
// parameters. A request without Content-Type is read as JSON, as FastAPI does.
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined || header.trim() === '') return true;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}
