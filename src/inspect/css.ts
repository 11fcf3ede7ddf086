// The inspection page's stylesheet (served as /inspect/inspect.css; the CSP allows no inline style).
// System fonts only. Box colours are the ones page/draw.ts strokes with.

export const INSPECT_CSS = `
:root { font: 15px/1.4 system-ui, sans-serif; color: #1b1b1b; background: #fafafa; }
body { max-width: 1100px; margin: 0 auto; padding: 0 1rem 2rem; }
header { display: flex; align-items: baseline; justify-content: space-between; flex-wrap: wrap; }
h1 { font-size: 1.4rem; }
form, #controls { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; margin: .5rem 0; }
#key { width: 22rem; max-width: 100%; }
#drop { display: block; margin: 1rem 0; padding: 2rem; border: 2px dashed #888; border-radius: 8px; text-align: center; cursor: pointer; background: #fff; }
#drop.over { border-color: #0a7d38; background: #eef8f1; }
#drop input { display: none; }
#notice:empty { display: none; }
#notice, .error { color: #a00000; font-weight: 600; }
#photos { list-style: none; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(506px, 1fr)); gap: 1rem; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: .75rem; }
.card h2 { font-size: 1rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.card canvas { display: block; max-width: none; background: #eee; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .75rem; margin: .5rem 0; }
.card dt { color: #555; }
.card dd { margin: 0; }
.changed { background: #fff3c4; }
#live { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: .75rem; margin: 1rem 0; }
#live h2 { font-size: 1rem; margin: 0 0 .5rem; display: inline; margin-right: 1rem; }
#live canvas { display: block; margin: .5rem 0; background: #eee; }
#live canvas[width="0"], #live canvas:not([width]) { display: none; }
#live dl, .card dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .75rem; margin: .5rem 0; }
#live dt { color: #555; }
#live dd { margin: 0; }
.reasons { display: none; font-size: .9rem; }
body.show-reasons .reasons { display: block; }
.reasons table { border-collapse: collapse; width: 100%; }
.reasons th, .reasons td { border-bottom: 1px solid #eee; padding: .15rem .3rem; text-align: left; vertical-align: top; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .3em; vertical-align: middle; }
.swatch.chosen { background: #00c853; }
.swatch.low { background: #ff9100; }
.swatch.other { background: #d500f9; }
`;
