// The web console's static files (console/ at the package's top level: HTML, ES modules, CSS) under GET /console and
// GET /console/{file}. Front thread; routes.ts names these handlers. The files are read once, asynchronously, when
// this module loads (before the node listens), so a request never touches the disk.
import { readdir, readFile } from 'node:fs/promises';
import { errors } from '../../errors.js';
import type { RequestContext } from '../request_context.js';
import { errorReply, plainReply, type Reply } from '../respond.js';

/** dist/src/front/handlers/console.js -> the package's console/ folder, which tsc does not copy into dist. */
const consoleDir = new URL('../../../../console/', import.meta.url);

const contentTypes: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** default-src 'self' with no inline script or style: data the console draws cannot run, and no page may frame it
 *  (clickjacking of the admin forms). nosniff comes with every answer (respond.ts). */
const securityHeaders: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  // Asset names carry no version: no-cache makes the browser revalidate, so an upgraded node never pairs a new page
  // with old modules. The whole console is under 30 KB.
  'Cache-Control': 'no-cache',
};

/** File name -> the whole reply; only names of plain files with a known type are kept. */
async function loadAssets(): Promise<Map<string, Reply>> {
  const assets = new Map<string, Reply>();
  let names: string[];
  try {
    names = await readdir(consoleDir);
  } catch {
    // Installed without the console folder (an old deploy kit): /console answers 404 saying so; the API is unaffected.
    return assets;
  }
  for (const name of names) {
    const type = contentTypes[name.slice(name.lastIndexOf('.') + 1)];
    if (type === undefined || !/^[a-z0-9_-]+\.[a-z]+$/.test(name)) continue;
    const body = new Uint8Array(await readFile(new URL(name, consoleDir)));
    assets.set(name, { status: 200, body, contentType: type, headers: securityHeaders });
  }
  return assets;
}

const assets = await loadAssets();

export function onConsoleIndex(_ctx: RequestContext): Reply {
  return assets.get('index.html') ?? plainReply(404, 'the web console is not installed with this node (no console/ folder)');
}

export function onConsoleFile(ctx: RequestContext): Reply {
  return assets.get(ctx.param(0)) ?? errorReply(errors.routeNotFound());
}
