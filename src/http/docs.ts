// Interactive docs served from npm packages (swagger-ui-dist, redoc), so they work
// without internet access. Assets are read once at start.
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

export function loadDocsAssets(): Record<string, DocsAsset> {
  return {
    'swagger-ui.css': { body: packageFile('swagger-ui-dist', 'swagger-ui.css'), contentType: 'text/css; charset=utf-8' },
    'swagger-ui-bundle.js': {
      body: packageFile('swagger-ui-dist', 'swagger-ui-bundle.js'),
      contentType: 'text/javascript; charset=utf-8',
    },
    'redoc.standalone.js': {
      body: packageFile('redoc', 'bundles/redoc.standalone.js'),
      contentType: 'text/javascript; charset=utf-8',
    },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Swagger UI page. `requestInterceptor` is inline JS for Swagger UI's option of that name,
 * used by the v1 docs to forward the page's own api-key to the key-protected spec.
 */
export function swaggerPage(title: string, specUrl: string, assetBase: string, requestInterceptor?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${assetBase}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="${assetBase}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: '#swagger-ui', deepLinking: true,
  persistAuthorization: true${requestInterceptor ? `, requestInterceptor: ${requestInterceptor}` : ''} });
</script></body></html>`;
}

export function redocPage(title: string, specUrl: string, assetBase: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="${escapeHtml(specUrl)}"></redoc>
<script src="${assetBase}/redoc.standalone.js"></script></body></html>`;
}
