// Node's module compile cache, preloaded by `npm start`: V8's compiled code of each module and,
// for the `.ts` files, their type-stripped source, kept on disk (os.tmpdir()/node-compile-cache,
// checked against each file's content, so an edited file is compiled afresh) so that a start
// after the first does not parse and strip its ~400 modules again: about half the CPU of loading
// them (docs/performance.md). Preloaded after node-check.js, which turns away a Node without it;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import module from 'node:module';

module.enableCompileCache?.();
