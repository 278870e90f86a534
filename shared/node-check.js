// The Node.js check that runs before anything of Portico: preloaded by every npm script that
// starts node (`node --import ./shared/node-check.js ...`) and imported first by the process
// entries, so that their built output checks too. Plain JavaScript with nothing newer than
// Node 18 can parse: an older Node must reach the one line below, not fail on a `.ts` entry
// (Node 20 cannot strip types) or deep in undici 8 (which needs 22.19) with a stack trace.
import process from 'node:process';

const MINIMUM = { major: 22, minor: 19 };
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < MINIMUM.major || (major === MINIMUM.major && minor < MINIMUM.minor)) {
  process.stderr.write(
    `Portico needs Node.js ${MINIMUM.major}.${MINIMUM.minor} or later (24 LTS recommended); ` +
      `this is Node.js ${process.versions.node}.\n`,
  );
  process.exit(1);
}
