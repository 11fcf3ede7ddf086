// Interactive docs served from npm packages (swagger-ui-dist, redoc), so the pages load nothing
// from outside this service and work without internet access. Assets are read once at start.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const requireHere = createRequire(__filename);

export interface DocsAsset {
  body: Buffer;
  contentType: string;
}

function packageFile(pkg: string, file: string): Buffer {
  return readFileSync(path.join(path.dirname(requireHere.resolve(`${pkg}/package.json`)), file));
}

/** ReDoc's side menu shows Redocly's logo from their CDN; an empty inline SVG takes its place. */
const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const EMPTY_SVG = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

function redocBundle(): Buffer {
  const source = packageFile('redoc', 'bundles/redoc.standalone.js').toString('utf8');
  const uses = source.split(REDOC_CDN_LOGO).length - 1;
  if (uses !== 1) throw new Error(`redoc.standalone.js names ${REDOC_CDN_LOGO} ${uses} times, not once: check src/http/docs/pages.ts against this ReDoc version`);
  return Buffer.from(source.replace(REDOC_CDN_LOGO, EMPTY_SVG), 'utf8');
}

export function loadDocsAssets(): Record<string, DocsAsset> {
  return {
    'swagger-ui.css': { body: packageFile('swagger-ui-dist', 'swagger-ui.css'), contentType: 'text/css; charset=utf-8' },
    'swagger-ui-bundle.js': {
      body: packageFile('swagger-ui-dist', 'swagger-ui-bundle.js'),
      contentType: 'text/javascript; charset=utf-8',
    },
    'redoc.standalone.js': {
      body: redocBundle(),
      contentType: 'text/javascript; charset=utf-8',
    },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Every docs page links to the inspection page (src/inspect/), where a photo's answer is drawn on it. */
const INSPECT_LINK = '<p><a href="/inspect">Inspection page: drop photos and see what the service sees</a></p>';

/**
 * Swagger UI page. `requestInterceptor` is inline JS for Swagger UI's option of that name,
 * used by the v1 docs to forward the page's own api-key to the key-protected spec.
 * `validatorUrl: null` turns off the badge that would send the spec to validator.swagger.io.
 */
export function swaggerPage(title: string, specUrl: string, assetBase: string, requestInterceptor?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${assetBase}/swagger-ui.css"></head>
<body>${INSPECT_LINK}<div id="swagger-ui"></div>
<script src="${assetBase}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: '#swagger-ui', deepLinking: true,
  persistAuthorization: true, validatorUrl: null${requestInterceptor ? `, requestInterceptor: ${requestInterceptor}` : ''} });
</script></body></html>`;
}

export function redocPage(title: string, specUrl: string, assetBase: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>${INSPECT_LINK}<redoc spec-url="${escapeHtml(specUrl)}"></redoc>
<script src="${assetBase}/redoc.standalone.js"></script></body></html>`;
}
