// Preloaded with `node --import <this file>` on Node < 22 (see ../harness.py).
// @modelcontextprotocol/conformance declares engines.node >= 22 and imports `globSync`
// from 'fs', which Node 20 lacks, so the harness dies at load time with a SyntaxError.
// Registering resolve hooks (module.register, Node >= 20.6) lets us hand the harness, and
// only the harness, an 'fs' that also has globSync; everything else sees the real 'fs'.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
