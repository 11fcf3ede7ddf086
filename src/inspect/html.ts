// The inspection page's HTML: controls for the key, the model version, the threshold and the
// reasons, the live camera, a drop zone, and the list the script fills with one card per photo. No inline script or
// style (the CSP allows neither); the script is an ES module from this origin.

export const INSPECT_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cat Comfort: what the service sees</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/inspect/inspect.css">
<script type="module" src="/inspect/main.js"></script>
</head><body>
<header><h1>What the service sees</h1>
<nav><a href="/v2/docs">API docs (Swagger UI)</a> · <a href="/v2/redoc">ReDoc</a></nav></header>
<form id="key-form" autocomplete="off">
<label for="key">API key</label>
<input id="key" type="password" spellcheck="false" placeholder="paste your api-key">
<button type="submit">Use key</button>
<button type="button" id="forget-key">Forget key</button>
<span id="key-state" role="status"></span>
</form>
<section id="controls" aria-label="Settings">
<label for="target">Model and version</label>
<select id="target"></select>
<label for="threshold">Threshold</label>
<input id="threshold" type="range" min="0" max="1" step="0.01" value="0.3" disabled>
<output id="threshold-value" for="threshold">–</output>
<label><input id="default-threshold" type="checkbox" checked> model default</label>
<label><input id="reasons" type="checkbox"> show the reasons</label>
</section>
<section id="live" aria-label="Live camera">
<h2>Live camera</h2>
<button type="button" id="live-start">Start the camera</button>
<button type="button" id="live-stop" disabled>Stop</button>
<span id="live-status" role="status"></span>
<video id="live-video" muted playsinline hidden></video>
<canvas id="live-canvas"></canvas>
<dl id="live-facts"></dl>
</section>
<label id="drop" for="files">Drop photos here, or click to pick some (JPEG, PNG, WebP, GIF, TIFF)
<input id="files" type="file" multiple accept="image/*,.tif,.tiff"></label>
<p id="notice" role="alert"></p>
<ol id="photos"></ol>
</body></html>
`;
