// Module-resolution hooks (runs on Node's loader thread). Redirects `import ... from 'fs'`
// (or 'node:fs') to ./fs-globsync.mjs when, and only when, the importing module lives inside
// the @modelcontextprotocol/conformance package. The wrapper's own import of 'node:fs' comes
// from this directory, so it resolves to the real module and cannot loop.
const WRAPPER = new URL('./fs-globsync.mjs', import.meta.url).href;
const PACKAGE_DIR = '/node_modules/@modelcontextprotocol/conformance/';

function fromHarness(parentURL) {
  return typeof parentURL === 'string' && parentURL.replaceAll('\\', '/').includes(PACKAGE_DIR);
}

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && fromHarness(context.parentURL)) {
    return { url: WRAPPER, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
