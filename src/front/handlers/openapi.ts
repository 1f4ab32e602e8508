// GET /openapi.json: the API's OpenAPI document (docs/openapi.yaml) as JSON, without credentials (outside /v1, like
// /healthz: spec 5.1, 9.1). Front thread; routes.ts names the handler. The YAML is read and converted once, when this
// module loads (before the node listens), so answering does no I/O and no parsing.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { errors } from '../../errors.js';
import { jsonType, type Reply } from '../respond.js';

/** From dist/src/front/handlers to the package root's docs/ (the image copies docs/openapi.yaml there too). */
const documentUrl = new URL('../../../../docs/openapi.yaml', import.meta.url);

/** The document's JSON text, or null when the file is missing or unreadable: the node still starts and the route
 *  answers 500, since the document is a convenience, not part of serving messages. */
const documentJson: string | null = await readFile(documentUrl, 'utf8').then(
  (text) => JSON.stringify(parse(text)),
  () => null,
);

export function onOpenApi(): Reply {
  if (documentJson === null) throw errors.internal('OpenAPI document not shipped with this node');
  return { status: 200, body: documentJson, contentType: jsonType };
}
