// Writes src/generated/engine.json from the native addon: the names and the read-back tool table
// the engine declares, for workflow code, which cannot load the addon itself.
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const native = require('../native/index.js');
const facts = { names: native.names(), tools: native.readBackTools() };
const dir = join(__dirname, '..', 'src', 'generated');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'engine.json'), `${JSON.stringify(facts, null, 2)}\n`);
